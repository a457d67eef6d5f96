"""The field, round two (issue 31): what a user reads when their own script, in their own env,
breaks or does something the cockpit did not expect. Each test runs the real process: a script
under `cockpit run --`, torchrun, the sampler, the supervisor's alerts and doctor."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cockpit.launch.plan import start_supervisor
from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.run.section import output_dir
from helpers import (
    NO_SFT_CHECK,
    PIPELINE,
    REPO,
    cockpit_cmd,
    demo_assets,
    fill_disk,
    hub_cache_env,
    stored_completions,
    tmpfs_mount,
    wait_for,
    wait_journal_end,
)


@pytest.fixture(scope="module")
def demo():
    return demo_assets()


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _run_to_end(command: list[str], cwd: Path, runs_dir: Path, timeout: float = 300, **kw) -> RunFolder:
    run = prepare_script(command, cwd=cwd, runs_dir=runs_dir, **kw)
    start_supervisor(run)
    wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=timeout)
    return run


def _cli(*args: str, cwd: Path | None = None, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env})


# -- 3. error texts that say what broke ---------------------------------------------------------

def test_a_script_whose_error_message_starts_on_the_next_line_ends_with_that_message(tmp_path, runs_dir):
    """numpy's ImportError puts its whole message on the lines after `ImportError:`; the run used to
    end "failed — ImportError: (fix: see stdout.log)"."""
    script = tmp_path / "train.py"
    script.write_text('raise ImportError("\\n\\nIMPORTANT: PLEASE READ THIS\\n\\n'
                      'Importing the numpy C-extensions failed.")\n', encoding="utf-8")
    run = _run_to_end([sys.executable, str(script)], tmp_path, runs_dir)
    status = run.read_status()
    assert status.state == "failed", run.stdout_log.read_text()
    assert status.reason and "Importing the numpy C-extensions failed" in status.reason, status.reason
    assert "\n" not in status.reason


@pytest.mark.slow
def test_a_two_process_crash_names_rank_zeros_error_not_the_launchers(tmp_path, runs_dir):
    """torchrun ends with its own `ChildFailedError:`; the cause is rank 0's `[rank0]: RuntimeError`."""
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent("""\
        import os, time
        import torch.distributed as dist
        dist.init_process_group("gloo")
        if int(os.environ["RANK"]) == 0:
            raise RuntimeError("rank zero blew up: shapes (3, 4) and (5, 6)")
        time.sleep(60)
        """), encoding="utf-8")
    run = _run_to_end([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                       str(script)], tmp_path, runs_dir)
    status = run.read_status()
    out = run.stdout_log.read_text()
    assert status.state == "failed" and "ChildFailedError" in out, out[-2000:]
    assert status.reason == "RuntimeError: rank zero blew up: shapes (3, 4) and (5, 6)", status.reason


@pytest.mark.slow
def test_a_sampler_failure_names_the_log_that_holds_its_traceback(tmp_path):
    """A complete checkpoint (its safetensors file whole, as its header says) whose one tensor has a
    shape its config does not give: the sampler fails in a way it did not foresee; the line names
    the file its traceback went to ("see the lines above on stderr" named nothing)."""
    out = tmp_path / "out"
    ckpt = out / "checkpoint-2"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 2, "log_history": []}), encoding="utf-8")
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [3, 3],
                                                       "data_offsets": [0, 36]}}).encode()
    header += b" " * (-len(header) % 8)
    (ckpt / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 36)
    (ckpt / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 32, "hidden_size": 8,
                                                  "intermediate_size": 16, "num_hidden_layers": 1,
                                                  "num_attention_heads": 2, "num_key_value_heads": 2}),
                                      encoding="utf-8")
    done = _cli("sample", str(out), "--prompt", "hi", "--max-new-tokens", "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    log = Path(os.environ["COCKPIT_CACHE_DIR"]) / "logs" / "sampler.log"
    assert line.startswith("cockpit: sampling failed: ") and line.endswith(f"— the traceback is in {log}"), line
    assert "Traceback (most recent call last)" in log.read_text(encoding="utf-8", errors="replace")


# -- 5. a script's trainer family ----------------------------------------------------------------

@pytest.fixture(scope="module")
def grpo_script(tmp_path_factory, demo):
    """One hand-written GRPO script run, read by two tests: `pipeline.py`'s GRPO stage (a Python
    reward function, 4 steps, a checkpoint every 2) run by a script that puts its own
    GRPOTrainer subclass in TRL's place first (open-r1 style), from the folder it was given in."""
    tmp_path = tmp_path_factory.mktemp("grpo")
    script = tmp_path / "mygrpo.py"
    script.write_text(textwrap.dedent(f"""\
        import runpy, sys
        import trl

        class MyGRPOTrainer(trl.GRPOTrainer):
            pass

        trl.GRPOTrainer = MyGRPOTrainer
        sys.argv = [{str(PIPELINE)!r}, *sys.argv[1:]]
        runpy.run_path({str(PIPELINE)!r}, run_name="__main__")
        """), encoding="utf-8")
    run = _run_to_end([sys.executable, str(script), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
                       "--stage", "grpo", "--max-steps", "4", "--save-steps", "2"], tmp_path, tmp_path / "runs")
    wait_journal_end(run)
    return run, tmp_path


@pytest.mark.slow
def test_a_hand_written_grpo_script_is_watched_with_its_python_reward_and_completions(grpo_script):
    """A GRPO script cockpit has never seen, run unchanged under the supervisor (the module's
    `grpo_script`), is journaled as a preset run is: its steps, its Python reward's metrics and
    completions, its checkpoints in its own output_dir, the Python it ran on."""
    run, tmp_path = grpo_script
    status = run.read_status()
    assert status.state == "finished", (status, run.stdout_log.read_text()[-2000:])
    records = _records(run)
    started = next(r for r in records if r.kind == journal.RUN_STARTED)
    assert started.data["trainer"] == "grpo" and started.data["max_steps"] == 4
    assert started.data["trainer_class"].endswith("GRPOTrainer") and started.data["script"] is True
    assert started.data["output_dir"] == "out"
    assert started.data["python"] == sys.executable  # `cockpit sample` loads with the script's own Python
    from cockpit.metrics.checkpoints import list_run_checkpoints

    assert [c.step for c in list_run_checkpoints(run.path).checkpoints] == [2, 4]  # in the script's output_dir
    steps = [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")]
    assert steps == [1, 2, 3, 4]
    assert all("rewards/number_reward/mean" in r.data for r in records if r.kind == journal.METRICS
               and not r.data.get("summary"))
    comps = stored_completions(run)
    assert comps and all(row["completion"] is not None and "number_reward" in row["rewards"]
                         for c in comps for row in c.data["rows"])
    assert [r.step for r in records if r.kind == journal.CHECKPOINT] == [2, 4]
    assert records[-1].kind == journal.RUN_ENDED and records[-1].data["state"] == "finished"
    assert output_dir(run) == tmp_path / "out"
    # The command ran unchanged, from the folder it was given in.
    assert (tmp_path / "out" / "checkpoint-4" / "trainer_state.json").is_file()
    assert "cd " + str(tmp_path) in run.command_txt.read_text()


@pytest.mark.slow
def test_a_grpo_scripts_own_trainer_subclass_gets_grpos_builtin_alerts(grpo_script):
    """A script's own GRPOTrainer subclass (open-r1 style) is named grpo, as a preset is, so the
    supervisor's built-in rules are GRPO's: no loss spike on a loss that rises from ~0 with the KL.
    (The module's `grpo_script`.)"""
    run, _ = grpo_script
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-3000:]
    started = next(r for r in _records(run) if r.kind == journal.RUN_STARTED)
    assert started.data["trainer"] == "grpo" and started.data["trainer_class"] == "__main__.MyGRPOTrainer"
    from cockpit.alerts.board import AlertBoard

    shown = {r.name for source, r in AlertBoard().rules(started.data["trainer"]) if source == "built-in"}
    assert "KL runaway" in shown and not any(n.startswith("loss spike") for n in shown)
    assert not [r for r in _records(run) if r.kind == journal.ALERT and "loss rose" in str(r.data)]


# -- 9. a model that did not change, said once --------------------------------------------------

@pytest.fixture(scope="module")
def unmoved_under_accelerate(tmp_path_factory, demo):
    """One script run read by two tests: `accelerate launch --num_processes 2` on this CPU (which
    starts one process) runs `pipeline.py` SFT for 4 steps at learning rate 0, saving every 2."""
    tmp_path = tmp_path_factory.mktemp("unmoved")
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", str(PIPELINE),
           str(demo / "models" / "tiny-lm"), str(demo / "data"), "out", "--stage", "sft", "--max-steps", "4",
           "--save-steps", "2", "--learning-rate", "0"]
    run = _run_to_end(cmd, tmp_path, tmp_path / "runs")
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-3000:]
    return run


@pytest.mark.slow
def test_a_script_whose_model_never_moves_is_told_once_in_words_for_a_script(unmoved_under_accelerate):
    """learning_rate 0 in the script: checkpoint-2, checkpoint-4 and the final model all equal the
    start; one warning says so (one run wrote fifteen), and its fix names the script's arguments.
    (The script runs under `accelerate launch`: the module's run, shared with the world-size test.)"""
    run = unmoved_under_accelerate
    assert [r.step for r in _records(run) if r.kind == journal.CHECKPOINT] == [2, 4]
    unchanged = [r for r in _records(run) if r.kind == journal.FINDING and r.data["kind"] == "model_unchanged"]
    assert len(unchanged) == 1, [r.data["summary"] for r in unchanged]
    assert unchanged[0].data["summary"].startswith("the model did not change")
    fix = unchanged[0].data["fix"]
    assert "your script" in fix and "preset" not in fix and "--set" not in fix


# -- 7. a migrate round trip that ends -----------------------------------------------------------

def test_a_copy_migrated_for_its_script_and_run_as_a_trl_config_is_told_the_command_that_ends_the_loop(tmp_path):
    """`migrate` writes `--for script` for a config with a project's keys; run as a TRL config, the
    copy is refused, and the refusal names `--for trl-cli` (it named `cockpit migrate FILE`, which
    wrote the same copy again). The command it names gives a copy TRL's CLI takes."""
    recipe = tmp_path / "sft.yaml"
    shutil.copy(REPO / "tests" / "fixtures" / "recipes" / "handbook_sft.yaml", recipe)
    done = _cli("migrate", str(recipe), "--trainer", "sft", cwd=tmp_path)
    copy = tmp_path / "sft.migrated.yaml"
    assert done.returncode in (0, 1) and copy.is_file(), done.stderr
    assert "for script: it holds chat_template, dataset_mixture" in done.stdout, done.stdout
    refused = _cli("run", "sft", str(copy), "--dry-run", cwd=tmp_path)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and lines, refused.stderr
    hinted = [ln for ln in lines if "cockpit migrate" in ln]
    assert hinted and all(f"cockpit migrate {copy} --for trl-cli" in ln for ln in hinted), hinted
    fixed = tmp_path / "for-trl.yaml"
    done = _cli("migrate", str(copy), "--trainer", "sft", "--for", "trl-cli", "-o", str(fixed), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # Offline, as the tests run: the recipe's model and data are in the local cache. The SFT data
    # check (a TRL import in a process of its own) is not the subject: off.
    env = hub_cache_env(tmp_path, models=("Qwen/Qwen2.5-0.5B",), datasets=("HuggingFaceH4/ultrachat_200k",))
    again = _cli("run", "sft", str(fixed), "--dry-run", "--set", NO_SFT_CHECK, cwd=tmp_path,
                 HF_HUB_CACHE=env["HF_HUB_CACHE"], HF_DATASETS_CACHE=env["HF_DATASETS_CACHE"])
    assert again.returncode == 0, again.stderr


# -- 11. a journal that cannot be written is said where runs are listed --------------------------

def _waiting_script_run(tmp_path, runs_dir):
    """A supervised script run that waits a minute doing nothing (no training stack)."""
    script = tmp_path / "wait.py"
    script.write_text("import time\nfor _ in range(600):\n    time.sleep(0.1)\n", encoding="utf-8")
    run = prepare_script([sys.executable, str(script)], cwd=tmp_path, runs_dir=runs_dir)
    start_supervisor(run)
    return run


def test_a_journal_that_cannot_be_written_is_shown_by_runs(tmp_path, runs_dir):
    """`chattr +i` on events.jsonl (the supervisor's writes fail with EPERM, even as root): status.json
    says so (journal_error), and `cockpit runs` and the home screen's note show it; it clears once
    the file can be written again."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr on this machine")
    run = _waiting_script_run(tmp_path, runs_dir)
    locked = False
    try:
        wait_for(lambda: run.read_status().state == "running" and run.events.is_file(), timeout=120)
        if subprocess.run(["chattr", "+i", str(run.events)], capture_output=True).returncode != 0:
            pytest.skip("this filesystem takes no immutable flag")
        locked = True
        wait_for(lambda: run.read_status().journal_error, timeout=60)  # the next resource sample fails
        listed = _cli("runs", "--runs-dir", str(runs_dir))
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        row = next(i for i, ln in enumerate(lines) if ln.startswith(run.name))
        assert lines[row + 1].startswith("  ! journal not written (EPERM"), listed.stdout
        from cockpit.run.summaries import summarize

        assert (summarize(run).journal_note or "").startswith("journal not written (EPERM")
        subprocess.run(["chattr", "-i", str(run.events)], check=True)
        locked = False
        wait_for(lambda: not run.read_status().journal_error, timeout=60)
        assert "journal not written" not in _cli("runs", "--runs-dir", str(runs_dir)).stdout
    finally:
        if locked:
            subprocess.run(["chattr", "-i", str(run.events)], check=False)
        _cli("stop", "--force", run.name, "--runs-dir", str(runs_dir))
        wait_for(lambda: not run.read_status().live, timeout=60)



@pytest.mark.anyio
async def test_the_live_screen_warns_once_while_the_journal_cannot_be_written(tmp_path, runs_dir):
    """The live screen on a real run whose events.jsonl is made immutable (`chattr +i`): once the
    supervisor sets journal_error, one warning says what is shown is behind; it is not said again
    while the error stays, and a screen opened after the file is writable again says nothing."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr on this machine")
    from cockpit.metrics.follow import STATUS_S as STATUS_EVERY_S
    from cockpit.ui.screens.live import LiveRunScreen
    from helpers.ui import app_for, notifications
    from helpers.ui import app_wait as wait_pilot

    run = _waiting_script_run(tmp_path, runs_dir)
    locked = False

    def said() -> list[str]:
        return [n for n in notifications(app) if n.startswith("the journal cannot be written")]

    try:
        wait_for(lambda: run.read_status().state == "running" and run.events.is_file(), timeout=120)
        app = app_for(tmp_path, mode="live", paths=[str(run.path)])
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_pilot(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the live screen", limit=60)
            await pilot.pause(2 * STATUS_EVERY_S)
            assert said() == []  # a journal that is written: no word
            if subprocess.run(["chattr", "+i", str(run.events)], capture_output=True).returncode != 0:
                pytest.skip("this filesystem takes no immutable flag")
            locked = True
            await wait_pilot(pilot, lambda: said(), "the journal warning", limit=60)
            [line] = said()
            assert line.startswith("the journal cannot be written (EPERM") and "behind the training" in line, line
            await pilot.pause(3 * STATUS_EVERY_S)  # several status polls later, still one
            assert len(said()) == 1, said()
            subprocess.run(["chattr", "-i", str(run.events)], check=True)
            locked = False
            wait_for(lambda: not run.read_status().journal_error, timeout=60)
        app = app_for(tmp_path, mode="live", paths=[str(run.path)])
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_pilot(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the live screen", limit=60)
            await pilot.pause(2 * STATUS_EVERY_S)
            assert said() == []
    finally:
        if locked:
            subprocess.run(["chattr", "-i", str(run.events)], check=False)
        _cli("stop", "--force", run.name, "--runs-dir", str(runs_dir))
        wait_for(lambda: not run.read_status().live, timeout=60)

# -- 12. a full disk ---------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB tmpfs of its own, unmounted at the end."""
    with tmpfs_mount(tmp_path / "small-disk", "16m") as mnt:
        yield mnt


def test_on_a_full_disk_the_supervisor_writes_the_runs_end_whole(small_disk, tmp_path):
    """The disk fills while a run lives; its stop is still written to status.json, through the
    room kept beside it and renamed in whole — a reader polling it all along never reads half a
    status (the in-place rewrite it replaced could be read torn)."""
    import threading

    runs = small_disk / "runs"
    script = tmp_path / "wait.py"
    script.write_text("import time\nfor _ in range(1200):\n    time.sleep(0.1)\n", encoding="utf-8")
    run = prepare_script([sys.executable, str(script)], cwd=tmp_path, runs_dir=runs)
    start_supervisor(run)
    filler = small_disk / "filler"
    torn: list[str] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            try:
                text = run.status_json.read_text(encoding="utf-8")
            except OSError:
                continue
            try:
                json.loads(text)
            except ValueError:
                torn.append(text[:2000])

    reader = threading.Thread(target=poll, daemon=True)
    try:
        wait_for(lambda: run.read_status().state == "running", timeout=120)
        assert (run.path / ".status.json.spare").is_file()  # kept while the disk had room
        reader.start()
        fill_disk(filler)
        stopped = _cli("stop", "--force", run.name, "--runs-dir", str(runs))
        assert stopped.returncode == 0, stopped.stderr
        try:
            wait_for(lambda: not run.read_status().live, timeout=120)
        except AssertionError:
            raise AssertionError((run.read_status(), (run.path / "supervisor.log").read_text()[-2000:],
                                  sorted(p.name for p in run.path.iterdir()))) from None
        status = run.read_status()
        assert status.state == "killed" and status.ended, status
        assert shutil.disk_usage(small_disk).free < 2**16  # written on a full disk: through the room kept
        assert (run.path / ".status.json.spare").is_file()  # and room is kept for the next write
    finally:
        done.set()
        if reader.is_alive():
            reader.join(10)
        filler.unlink(missing_ok=True)
        if run.read_status().live:
            _cli("stop", "--force", run.name, "--runs-dir", str(runs))
            wait_for(lambda: not run.read_status().live, timeout=60)
    assert not torn, torn[:3]


def test_on_a_full_disk_a_reader_of_the_old_status_is_not_written_under_by_the_next_two_writes(small_disk):
    """A reader that opened status.json just before a write on a full disk may still be reading it
    when the next write comes (the supervisor writes the run's end and a journal problem
    milliseconds apart): the file it holds is not written again by the next two writes. (It was
    the very next write's spare: the reader got the old text's head and the new one's tail.)"""
    from cockpit.run.folder import Status

    run = RunFolder(small_disk / "run")
    run.path.mkdir()
    run.write_status(Status(state="running", name="run", trainer="sft"))
    run.reserve_status()
    fill_disk(small_disk / "filler")
    before = run.status_json.read_bytes()
    with open(run.status_json, "rb") as held:  # opened before the writes, read after them
        for state in ("stopping", "killed"):
            run.update_status(state=state, reason="a reason longer than the running status had " * 2)
        assert held.read() == before
    assert run.read_status().state == "killed"
    assert shutil.disk_usage(small_disk).free < 2**16  # both writes on a full disk
    run.update_status(state="failed")  # and a third: the room goes round
    assert run.read_status().state == "failed"


def test_a_scripts_own_cockpit_callback_on_a_full_disk_ends_without_a_traceback(small_disk, tmp_path):
    """`cockpit.CockpitCallback()` in a plain `python train.py` keeps its own run folder; the disk
    fills and the script exits before training: its exit-time writes printed a traceback. Now the
    run's end is written (through the reserved room) and nothing but cockpit's own line is said."""
    runs = small_disk / "runs"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""\
        from cockpit import CockpitCallback
        callback = CockpitCallback(runs_dir={str(runs)!r})
        with open({str(small_disk / "filler")!r}, "wb") as fh:
            try:
                while True:
                    fh.write(b"\\0" * 2**16)
                    fh.flush()
            except OSError:
                pass
        print("the disk is full", flush=True)
        """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "the disk is full" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    run = RunFolder(next(runs.iterdir()))
    status = run.read_status()
    assert status.state == "failed" and status.reason == "the script exited before training ended", status


# -- 8. processes that are not what was asked ---------------------------------------------------

@pytest.mark.slow
def test_accelerate_asked_for_two_processes_on_a_cpu_is_told_it_runs_one(unmoved_under_accelerate):
    """`accelerate launch --num_processes 2` on a CPU silently starts one process; the run said
    "finished" with no word. The journal now says the world size is not what was asked. (The
    module's run, shared with the test of a model that never moves: its learning rate is 0.)"""
    run = unmoved_under_accelerate
    started = [r for r in _records(run) if r.kind == journal.RUN_STARTED]
    assert len(started) == 1 and started[0].data["world_size"] == 1
    said = [r.data["message"] for r in _records(run) if r.kind == journal.WARNING and r.data["code"] == "world_size"]
    assert len(said) == 1 and said[0].startswith("the command asked for 2 processes (--num_processes 2) and the "
                                                 "trainer runs with world size 1"), said


@pytest.mark.slow
def test_two_processes_that_each_think_they_are_rank_zero_are_said(tmp_path, runs_dir, demo):
    """torchrun starts two processes, and each trainer trains alone (as transformers does on a CPU
    where it does not join them; here the script drops the launcher's variables itself): two
    separate trainings into one output folder. The journal has one writer and says so."""
    wrapper = tmp_path / "alone.py"
    wrapper.write_text(textwrap.dedent(f"""\
        import os, runpy, sys
        for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                     "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
            os.environ.pop(name, None)
        sys.argv = [{str(PIPELINE)!r}, *sys.argv[1:]]
        runpy.run_path({str(PIPELINE)!r}, run_name="__main__")
        """), encoding="utf-8")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(wrapper),
           str(demo / "models" / "tiny-lm"), str(demo / "data"), "out", "--stage", "sft", "--max-steps", "2",
           "--save-steps", "100"]
    run = _run_to_end(cmd, tmp_path, runs_dir)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-3000:]
    records = _records(run)
    assert len([r for r in records if r.kind == journal.RUN_STARTED]) == 1  # one writer all the same
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2]
    codes = [r.data["code"] for r in records if r.kind == journal.WARNING]
    assert codes.count("two_rank_zeros") == 1 and codes.count("world_size") == 1, codes
    said = next(r.data["message"] for r in records if r.kind == journal.WARNING and r.data["code"] == "two_rank_zeros")
    assert said.startswith("the launcher started 2 processes (WORLD_SIZE=2) but this trainer runs alone"), said


# -- one script run stopped and resumed, read by three tests (issues 31 and 42) ------------------


@pytest.fixture(scope="module")
def stopped_and_resumed(tmp_path_factory, demo):
    """One real script run (`pipeline.py`, SFT, 30 steps, a checkpoint every 2) through four
    attempts, what each test of it reads written down as it happened (a test's own asserts are
    in the test); the run is left finished at step 30 for the train-further test, which trains it
    on itself. The first three attempts sleep 0.3 s a step so that each stop lands short of the
    end (a stop comes a few steps after the attempt is seen training, later under load: the third
    stops near step 15); the last runs at full speed. What `train()` is given comes from the file `--resume-as-file`
    names, written before each resume.

    1. `stop --finish-script` after 3 steps: the script goes on past train() to its own ending.
    2. resumed with `train(None)`, then a plain `stop`: ended at its checkpoint, nothing after
       train() ran.
    3. resumed with open-r1's `get_last_checkpoint`, which takes the newest checkpoint, whose
       weights are cut short here; then `stop`.
    4. resumed with the script's own oldest checkpoint, and left to run the script to its end."""
    tmp_path = tmp_path_factory.mktemp("resumed")
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    how, slow, marker, out = (tmp_path / "resume-as", tmp_path / "slow", tmp_path / "after-train.txt",
                              tmp_path / "out")
    slow.touch()
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out", "--stage",
           "sft", "--max-steps", "30", "--save-steps", "2", "--sleep", "0.3", "--sleep-while", str(slow),
           "--resume-as-file", str(how), "--after-train", str(marker)]
    run = prepare_script(cmd, cwd=tmp_path, runs_dir=runs_dir, name="resumes")
    seen = {"run": run, "tmp_path": tmp_path, "runs_dir": runs_dir, "marker": marker}

    def attempt() -> list[journal.Record]:
        records = _records(run)
        starts = [i for i, r in enumerate(records) if r.kind == journal.RUN_STARTED]
        return records[starts[-1]:] if starts else []

    def steps() -> list[int]:
        return [r.step for r in attempt()
                if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]

    def said() -> list[str]:  # the hook's word, written before the Trainer's run_started
        return [r.data["message"] for r in _records(run) if r.kind == journal.WARNING
                and r.data.get("code") == "resume_checkpoint"]

    def stop_after(n: int, *extra: str) -> str:
        wait_for(lambda: len(steps()) >= n, timeout=300)
        stopped = _cli("stop", run.name, *extra, "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        wait_for(lambda: not run.read_status().live, timeout=120)
        assert run.read_status().state == "stopped", run.stdout_log.read_text()[-3000:]
        return stopped.stdout

    def resume(mode: str) -> tuple[str, list[int], str]:
        how.write_text(mode)
        before = sum(r.kind == journal.RUN_STARTED for r in _records(run))
        done = _cli("resume", run.name, "--runs-dir", str(runs_dir))
        assert done.returncode == 0, done.stdout + done.stderr
        wait_for(lambda: sum(r.kind == journal.RUN_STARTED for r in _records(run)) > before
                 and len(steps()) >= 2, timeout=300)
        named = next(ln for ln in run.command_txt.read_text().splitlines() if ln.startswith("# resumed from "))
        return str(attempt()[0].data["resumed_from"]), steps(), named

    def newest(but: Path | None = None) -> Path:
        return max((c for c in out.glob("checkpoint-*") if c != but), key=lambda c: int(c.name.split("-")[1]))

    def warned(code: str) -> list[str]:
        return [r.data["message"] for r in _records(run) if r.kind == journal.WARNING and r.data.get("code") == code]

    try:
        start_supervisor(run)
        # 1. stop --finish-script: the script's own ending runs
        seen["finish_said"] = stop_after(3, "--finish-script")
        seen["finish_ending"] = (marker.is_file(), (out / "model.safetensors").is_file())
        seen["finish_warned"] = warned("stop_finish_script")
        marker.unlink(missing_ok=True)
        (out / "model.safetensors").unlink(missing_ok=True)
        # 2. train(None), then a plain stop: the script ends at its checkpoint
        chosen = newest()
        seen["none"] = none = (chosen, *resume("none"), said())
        seen["stop_said"] = stop_after(len(none[2]) + 2)
        at = max(steps())
        seen["stop_ending"] = (marker.exists(), (out / "model.safetensors").exists(),
                               (out / f"checkpoint-{at}").is_dir())
        seen["stopped_at"] = (at, warned("stopped_at_checkpoint"), run.read_status().reason or "")
        # 3. get_last_checkpoint: the highest number, here one whose weights were cut short
        cut = newest()
        with open(cut / "model.safetensors", "r+b") as fh:
            fh.truncate(100)
        seen["last"] = last = (cut, newest(but=cut), *resume("last"), said())
        stop_after(len(last[3]) + 2)
        # 4. a checkpoint the script chose itself (its oldest), at full speed to the end
        slow.unlink()
        used, first_steps, _ = resume("first")
        wait_for(lambda: "out/checkpoint-2" in run.command_txt.read_text() or str(out / "checkpoint-2")
                 in run.command_txt.read_text(), timeout=60)
        named = next(ln for ln in run.command_txt.read_text().splitlines() if ln.startswith("# resumed from "))
        seen["first"] = (used, first_steps, named, said())
        wait_for(lambda: not run.read_status().live, timeout=300)
        seen["end"] = (run.read_status().state, steps()[-1], marker.read_text() if marker.is_file() else None,
                       (out / "model.safetensors").is_file(), run.stdout_log.read_text()[-3000:])
        yield seen
    finally:
        if run.read_status().live:
            _cli("stop", run.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir))
            wait_for(lambda: not run.read_status().live, timeout=60)


@pytest.mark.slow
def test_a_resumed_script_carries_on_from_the_checkpoint_command_txt_names_whatever_it_passes_train(
        stopped_and_resumed):
    """Issue 31: after a resume the journal started over at step 1, and command.txt named another
    checkpoint than the one used. One real script run, stopped and resumed three times, each time
    passing train() something else (the module's `stopped_and_resumed`): `train(None)` and
    open-r1's `get_last_checkpoint` (which takes a checkpoint whose weights were cut short) get the
    checkpoint `cockpit resume` chose, and carry on from its step; a checkpoint the script chose
    itself is kept, said, and named by command.txt, and the script runs to its end from it."""
    seen = stopped_and_resumed
    out = seen["tmp_path"] / "out"
    # train(None): resumed from the checkpoint cockpit chose, not from step 0
    chosen, used, steps, named, said = seen["none"]
    at = int(chosen.name.split("-")[1])
    assert used == str(chosen) and steps[0] == at + 1, (used, steps)
    assert named.startswith(f"# resumed from {chosen} ") and said == []
    # get_last_checkpoint: the newest was cut short; cockpit resumes from the one before, and says so
    newest, previous, used, steps, named, said = seen["last"]
    assert used == str(previous) and steps[0] == int(previous.name.split("-")[1]) + 1, (used, steps)
    assert named.startswith(f"# resumed from {previous} ")
    assert said == [f"the script passes train() its own checkpoint out/{newest.name}; cockpit resumes from "
                    f"{previous}, the newest complete one"], said
    # a checkpoint the script chose itself (its oldest): kept, said, and command.txt names it
    used, steps, named, said = seen["first"]
    assert used == "out/checkpoint-2" and steps[0] == 3, (used, steps)
    assert named.startswith(f"# resumed from {out / 'checkpoint-2'} (the script's own"), named
    assert len(said) == 2 and said[1].startswith("the script resumes from its own checkpoint out/checkpoint-2, "
                                                 "not "), said
    state, last_step, _, _, tail = seen["end"]
    assert state == "finished", tail
    assert last_step == 30


@pytest.mark.slow
def test_stop_and_save_ends_the_script_at_its_checkpoint_and_resume_runs_it_to_its_end(stopped_and_resumed):
    """open-r1's script went on past train() after a stop-and-save, and saved the cut-short model as
    its final one. Now nothing after train() runs (the script's `--after-train` file and its final
    save_model are absent); `stop --finish-script` keeps the script's own ending; the resumed run
    runs the script to its end. The run is the module's `stopped_and_resumed`: its first stop is
    the `--finish-script` one, its second the plain stop-and-save, its last attempt the one that
    runs to the end."""
    seen = stopped_and_resumed
    assert "the script then goes on past train() to its own ending" in seen["finish_said"], seen["finish_said"]
    assert seen["finish_ending"] == (True, True)  # the script's own ending ran: --after-train's file, save_model
    assert seen["finish_warned"]

    assert "the script ends there: nothing after its train() runs" in seen["stop_said"], seen["stop_said"]
    assert seen["stop_ending"] == (False, False, True)  # ended at the checkpoint, nothing after train()
    at, ended, reason = seen["stopped_at"]
    assert len(ended) == 1 and ended[0].startswith(f"stopped and saved at step {at}: the script was ended at its "
                                                   "checkpoint"), ended
    assert "nothing after train() ran" in reason, reason

    state, _, after, model, tail = seen["end"]
    assert state == "finished", tail
    assert after == "train() returned at step 30\n" and model  # the script's ending: its file, save_model


@pytest.mark.slow
def test_a_finished_script_run_trains_further_with_resume_set_max_steps(stopped_and_resumed):
    """`cockpit resume RUN --set max_steps=N` on a finished script run (the module's
    `stopped_and_resumed`, finished at step 30): the hook sets the Trainer's max_steps at train(),
    says so in the journal, and the script runs to its end again. What the hook cannot change at
    train() is refused in one line."""
    seen = stopped_and_resumed
    run, runs_dir, marker = seen["run"], seen["runs_dir"], seen["marker"]
    assert run.read_status().state == "finished"
    (seen["tmp_path"] / "resume-as").write_text("")  # the script calls a plain train() again
    refused = _cli("resume", run.name, "--runs-dir", str(runs_dir))
    assert refused.returncode == 2 and "--set max_steps=60" in refused.stderr, refused.stderr
    wrong = _cli("resume", run.name, "--set", "learning_rate=1", "--runs-dir", str(runs_dir))
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    assert "--set learning_rate:" in wrong.stderr and "max_steps" in wrong.stderr
    too_few = _cli("resume", run.name, "--set", "max_steps=30", "--runs-dir", str(runs_dir))
    assert too_few.returncode == 2 and "already at step 30" in too_few.stderr, too_few.stderr

    done = _cli("resume", run.name, "--set", "max_steps=32", "--wait", "--runs-dir", str(runs_dir))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "trains with max_steps=32" in done.stderr
    records = _records(run)
    this = records[max(i for i, r in enumerate(records) if r.kind == journal.RUN_STARTED):]
    assert [r.step for r in this if r.kind == journal.METRICS and not r.data.get("summary")] == [31, 32]
    changed = [r.data["message"] for r in records if r.kind == journal.WARNING and r.data.get("code") == "train_args"]
    assert changed == ["cockpit resume --set: Trainer 1 of the script trains with max_steps 30 → 32"], changed
    assert marker.read_text() == "train() returned at step 32\n"
    assert run.read_status().state == "finished"


def _bare_venv(where: Path) -> Path:
    """A venv with no packages at all: a Python that cannot import transformers or torch."""
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    return where / "bin" / "python"


@pytest.mark.slow
def test_sample_and_merge_take_python_for_a_model_trained_elsewhere(tmp_path):
    """An output folder trained outside the cockpit, in another env: `sample --python PY` loads it
    with that env's Python; a Python that lacks transformers is named, with the fix. The two
    samples that load the model share one sampler process (`helpers.SharedSampler`, `cockpit
    sample` run in this process), which takes only the Python the command chose: this one."""
    from helpers import SharedSampler, farm_copy

    run = farm_copy("sft", tmp_path / "runs")
    out = output_dir(run)
    assert out is not None
    bare = _bare_venv(tmp_path / "bare")
    ask = ("--prompt", "hi", "--max-new-tokens", "2", "--no-keep")
    shared = SharedSampler(tmp_path / "sampler.log")
    try:
        done = shared.cli("sample", str(out), *ask, "--python", sys.executable)
        assert done.returncode == 0 and "── prompt 1: hi" in done.stdout, done.stderr

        lacks = _cli("sample", str(out), *ask, "--python", str(bare))
        line = lacks.stderr.strip().splitlines()[-1]
        assert lacks.returncode != 0 and "No module named" in line
        assert f"it ran on {bare} (given with --python)" in line, line

        # a run that recorded a Python without transformers (the env it trained in is gone, or other):
        # the line names the Python it tried and says to give --python
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_started("sft", output_dir=str(out), python=str(bare)))
        tried = _cli("sample", run.name, *ask, "--runs-dir", str(run.path.parent))
        line = tried.stderr.strip().splitlines()[-1]
        assert tried.returncode != 0 and "No module named" in line, tried.stderr
        assert f"it ran on {bare} (the Python the run's script trained with); give the Python of the env the " \
               "model was trained in: --python " in line, line
        again = shared.cli("sample", run.name, *ask, "--python", sys.executable, "--runs-dir", str(run.path.parent))
        assert again.returncode == 0, again.stderr
    finally:
        shared.close()

    merged = _cli("merge", str(out), "-o", str(tmp_path / "merged"), "--python", "/no/such/python")
    assert merged.returncode == 2 and merged.stderr.strip() == (
        "cockpit: --python /no/such/python: no such program — give the python of the env the model was trained in, "
        "e.g. /path/to/venv/bin/python"), merged.stderr


@pytest.mark.proc
def test_a_stop_that_meets_a_resume_starting_stops_the_new_attempt(tmp_path):
    """Issue 42: `cockpit stop` at the instant a resume starts read the old attempt's end, said
    "nothing to stop", and the run trained on. The resume holds the run's lock before its status
    says `starting`: the stop waits for it, and stops the new attempt."""
    from cockpit.launch import plan
    from cockpit.run import owner
    from helpers import fake_run

    runs = tmp_path / "runs"
    run = fake_run(runs, "--steps", "2")
    wait_for(lambda: not run.read_status().live, timeout=120)
    assert run.read_status().state == "finished"
    assert "nothing to stop" in _cli("stop", run.name, "--runs-dir", str(runs)).stderr  # ended, nobody starting it

    ended = run.read_status()
    lock = owner.acquire(run.path, run.name)  # what `cockpit resume` holds before it writes `starting`
    try:
        stopping = subprocess.Popen(cockpit_cmd("stop", run.name, "--force", "--runs-dir", str(runs)),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    stdin=subprocess.DEVNULL)
        time.sleep(1.5)
        assert stopping.poll() is None  # waiting for the starter, not "nothing to stop"
        plan._next_attempt(run, ended, None, lock)  # the rest of the resume: `starting`, then its supervisor
    finally:
        os.close(lock)
    said, err = stopping.communicate(timeout=120)
    assert stopping.returncode == 0 and "nothing to stop" not in err and said.strip(), err
    wait_for(lambda: not run.read_status().live, timeout=120)
    status = run.read_status()
    assert (status.attempt, status.state) == (ended.attempt + 1, "killed"), status


@pytest.mark.proc
def test_a_word_naming_both_a_run_and_a_folder_here_is_refused_naming_both(tmp_path):
    """Issue 42: a run named `two-…` and a folder `two` in the working folder: the folder won
    silently ("no checkpoints yet in two", "not a run folder"). Now one line names both and how to
    give each; with a slash each is picked."""
    from helpers import make_run_folder

    runs = tmp_path / "runs"
    run = make_run_folder(runs, "two-20261128-101010")
    (tmp_path / "two").mkdir()
    for args in (("watch", "two", "--no-follow"), ("checkpoints", "two"), ("stop", "two")):
        done = _cli(*args, "--runs-dir", "runs", cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"cockpit: two: both a folder here and the run two-20261128-101010 in {runs} — give ./two for the "
            f"folder, or {run.path} for the run"], (args, done.stderr)
    picked = _cli("watch", "runs/two-20261128-101010", "--no-follow", "--runs-dir", "runs", cwd=tmp_path)
    assert picked.returncode == 0, picked.stderr
    folder = _cli("watch", "./two", "--no-follow", "--runs-dir", "runs", cwd=tmp_path)
    assert folder.returncode == 2 and "./two: not a run folder" in folder.stderr, folder.stderr
    # the runs folder itself as the working folder: the name is the run's own folder, nothing to mix up
    assert _cli("watch", run.name, "--no-follow", "--runs-dir", ".", cwd=runs).returncode == 0
