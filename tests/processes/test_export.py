"""`cockpit export`: CSV of every metric and a PNG of the default panels, without the TUI."""

from __future__ import annotations

import csv
import subprocess

import pytest

from helpers import FIXTURES, cockpit_cmd


@pytest.mark.proc
def test_csv_has_every_step_and_key_with_nan_kept(tmp_path):
    out = tmp_path / "m.csv"
    proc = subprocess.run(cockpit_cmd("export", str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"),
                                      "--csv", str(out)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open()))
    train = [r for r in rows if r["kind"] == "train"]
    assert [int(r["step"]) for r in train] == list(range(1, 76))
    assert "rewards/margins" in rows[0] and "grad_norm" in rows[0]
    assert sum(1 for r in train if r["grad_norm"] == "nan") == 4


@pytest.mark.proc
def test_png_is_written_for_a_grpo_run(tmp_path):
    out = tmp_path / "p.png"
    proc = subprocess.run(cockpit_cmd("export", str(FIXTURES / "trl_grpo_modern_multireward.json"),
                                      "--png", str(out)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


@pytest.mark.proc
def test_eval_rows_sharing_a_step_with_train_rows_are_both_kept(tmp_path):
    out = tmp_path / "w.csv"
    subprocess.run(cockpit_cmd("export", str(FIXTURES / "seq2seq_whisper_eval_wer_legacy_format.json"),
                               "--csv", str(out)), check=True, capture_output=True, timeout=60)
    rows = list(csv.DictReader(out.open()))
    at_1000 = {r["kind"] for r in rows if r["step"] == "1000"}
    assert at_1000 == {"train", "eval"}


@pytest.mark.parametrize("content", [b"", b'{"log_history": [{"loss": 1, "st', b"\x00\xff garbage",
                                     b'{"log_history": 5}'])
@pytest.mark.proc
def test_unusable_input_is_one_line_and_exit_2(tmp_path, content):
    bad = tmp_path / "trainer_state.json"
    bad.write_bytes(content)
    proc = subprocess.run(cockpit_cmd("export", str(bad), "--csv", str(tmp_path / "o.csv")),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.proc
def test_serve_publishes_the_app_on_localhost_behind_its_token(tmp_path):
    import re
    import socket
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(cockpit_cmd("--runs-dir", str(tmp_path), "serve", "--port", str(port)),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = ""
        for _ in range(200):
            line = proc.stdout.readline()
            if "token=" in line or not line:
                break
        found = re.search(r"(http://\S+)/\?token=(\S+)", line)
        assert found, line
        url, token = found.groups()
        assert url == f"http://127.0.0.1:{port}"
        body = b""
        for _ in range(100):
            try:
                req = urllib.request.Request(f"{url}/", headers={"Authorization": f"token {token}"})
                body = urllib.request.urlopen(req, timeout=2).read()
                break
            except urllib.error.HTTPError:
                raise
            except OSError:
                time.sleep(0.2)
        assert b"<html" in body.lower() and b"cockpit" in body.lower()
        try:
            urllib.request.urlopen(f"{url}/", timeout=2)
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- export reads the RunData the TUI shows ---------------------------------------------------------


def _resumed_run(root):
    """A run folder whose journal goes back after a resume: steps 1-10 logged (grad_norm on 9 and
    10 only), a checkpoint at 5, then a second attempt from checkpoint-5 logging 6-8 again (new
    values) with an eval at 8, and the end-of-training summary."""
    from cockpit.run import journal

    run = root / "resumed"
    run.mkdir()
    with journal.JournalWriter(run / "events.jsonl") as jw:
        jw.write(journal.run_started("sft", max_steps=10))
        for s in range(1, 11):
            jw.write(journal.metrics(s, {"loss": float(s), **({"grad_norm": 0.5} if s >= 9 else {})}))
            if s == 5:
                jw.write(journal.checkpoint(5, str(run / "output" / "checkpoint-5")))
        jw.write(journal.run_ended("killed"))
        jw.write(journal.run_started("sft", max_steps=10, resumed_from=str(run / "output" / "checkpoint-5")))
        for s in range(6, 9):
            jw.write(journal.metrics(s, {"loss": 100.0 + s}))
        jw.write(journal.eval_metrics(8, {"eval_loss": 1.25}))
        jw.write(journal.metrics(8, {"train_runtime": 12.5, "train_loss": 3.0}))
        jw.write(journal.run_ended("finished"))
    return run


def _csv_series(path):
    """{key: (steps, values)} of the train and eval rows of an exported CSV, and its summary row."""
    series: dict[str, tuple[list[int], list[float]]] = {}
    summary: dict[str, float] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            step, kind = int(row.pop("step")), row.pop("kind")
            for key, text in row.items():
                if text == "":
                    continue
                if kind == "summary":
                    summary[key] = float(text)
                else:
                    steps, values = series.setdefault(key, ([], []))
                    steps.append(step)
                    values.append(float(text))
    return series, summary


def _assert_same_series(exported, store):
    import numpy as np

    assert set(exported) == set(store.keys())
    for key, (steps, values) in exported.items():
        x, y = store.series(key)
        assert steps == x.tolist(), key
        np.testing.assert_array_equal(np.array(values), y, err_msg=key)  # NaN equals NaN here


def test_a_resumed_run_exports_exactly_the_points_its_store_holds(tmp_path):
    from cockpit.metrics.export import export
    from cockpit.metrics.rundata import load_journal

    run = _resumed_run(tmp_path)
    export(run, csv_out=str(tmp_path / "m.csv"))
    exported, summary = _csv_series(tmp_path / "m.csv")
    shown, _ = load_journal(run / "events.jsonl", "resumed")  # what the live screen holds
    _assert_same_series(exported, shown.store)
    # The steps the resume went back over appear once, with the second attempt's values; what
    # only the first attempt logged past the checkpoint (grad_norm at 9 and 10) is gone.
    assert exported["loss"] == ([1, 2, 3, 4, 5, 6, 7, 8], [1.0, 2.0, 3.0, 4.0, 5.0, 106.0, 107.0, 108.0])
    assert "grad_norm" not in exported
    assert exported["eval_loss"] == ([8], [1.25])
    assert summary == {"train_runtime": 12.5, "train_loss": 3.0}
    with open(tmp_path / "m.csv", newline="", encoding="utf-8") as fh:
        kinds = [(r["step"], r["kind"]) for r in csv.DictReader(fh)][-3:]
    assert kinds == [("8", "train"), ("8", "eval"), ("8", "summary")]


@pytest.mark.parametrize("name", ["trl_dpo_nan_gradnorm_midrun.json", "trl_grpo_modern_multireward.json",
                                  "seq2seq_whisper_eval_wer_legacy_format.json", "trainer_eval_best_checkpoint.json",
                                  "resumed run folder"])
def test_export_and_the_replay_loader_give_equal_series(tmp_path, name):
    from cockpit.metrics.export import export
    from cockpit.metrics.replay_loader import load_replay

    path = _resumed_run(tmp_path) if name == "resumed run folder" else FIXTURES / name
    export(path, csv_out=str(tmp_path / "m.csv"))
    exported, summary = _csv_series(tmp_path / "m.csv")
    shown = load_replay(str(path))  # what the replay screen holds
    _assert_same_series(exported, shown.store)
    assert summary == shown.store.summary


def test_export_writes_the_run_data_a_screen_hands_over(tmp_path):
    """The TUI's export key passes the RunData it shows: the files hold that, not a fresh read."""
    from cockpit.metrics.export import export
    from cockpit.metrics.rundata import load_journal
    from cockpit.run import journal

    run = _resumed_run(tmp_path)
    shown, _ = load_journal(run / "events.jsonl", "resumed")
    shown.store.add_many([journal.metrics(9, {"loss": 9.5})])  # a line the file does not hold
    done = export(run, csv_out=str(tmp_path / "m.csv"), png_out=str(tmp_path / "p.png"), data=shown)
    exported, _ = _csv_series(tmp_path / "m.csv")
    _assert_same_series(exported, shown.store)
    assert exported["loss"][0][-1] == 9 and done["png"] >= 1
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_tui_export_key_writes_a_copy_of_the_run_data_it_shows(tmp_path):
    """`export_and_notify([(path, folder, stem, data)])` copies the RunData on the UI thread (the screen keeps
    applying journal lines to it) and writes that copy."""
    from cockpit.metrics.rundata import load_journal
    from cockpit.ui.exporting import export_and_notify

    class App:
        on_ui_thread: list[str] = []
        theme_variables = {"primary": "#0178D4", "warning": "#FEA62B"}  # the PNG's colours: the theme's

        def call_from_thread(self, fn, *args, **kwargs):
            self.on_ui_thread.append(fn.__name__)
            return fn(*args, **kwargs)

    class Screen:
        app = App()
        notes: list[tuple[str, str]] = []

        def notify(self, message, *, title="", **_):
            self.notes.append((title, message))

    run = _resumed_run(tmp_path)
    shown, _ = load_journal(run / "events.jsonl", "resumed")
    screen = Screen()
    export_and_notify(screen, [(run, tmp_path, "x-", shown)])
    assert screen.app.on_ui_thread == ["series_colors", "shown", "notify"]
    assert screen.notes == [("exported", f"{tmp_path / 'x-metrics.csv'}\n{tmp_path / 'x-panels.png'}")]
    exported, _ = _csv_series(tmp_path / "x-metrics.csv")
    _assert_same_series(exported, shown.store)


def test_the_png_wears_the_screens_colours(tmp_path):
    """One colour rule (metrics.plot_colors) for the panels and the PNG: each series is drawn in
    the palette colour the screen gives it (issue 40: the PNG used matplotlib's own)."""
    import numpy as np
    from matplotlib.image import imread

    from cockpit.metrics import plot_colors
    from cockpit.metrics.export import write_png
    from cockpit.metrics.rundata import RunData
    from cockpit.metrics.sources import open_source

    data = RunData("sft", store=open_source(FIXTURES / "sft_3765_steps_first_log_spike.json").load_store())
    palette = [(200, 30, 40), (20, 160, 60), (30, 60, 220), (220, 200, 20), (150, 20, 200), (20, 200, 200)]
    write_png(data, tmp_path / "p.png", palette)
    pixels = np.unique((imread(tmp_path / "p.png")[..., :3] * 255).round().astype(int).reshape(-1, 3), axis=0)
    loss, eval_loss = plot_colors.panel_colors([(0, "loss"), (0, "eval_loss")], palette, multi=False,
                                               keys=[data.store.keys()])

    def drawn(rgb) -> bool:
        return bool((np.abs(pixels - np.array(rgb)).max(axis=1) <= 2).any())

    assert drawn(loss) and drawn(eval_loss) and loss != eval_loss
    assert not drawn((31, 119, 180)), "no matplotlib default blue"
