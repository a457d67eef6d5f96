"""Faults while watching, each the real fault: a webhook on 127.0.0.1 that never answers or answers
garbage, a notify command that hangs with a child of its own, an events.jsonl made immutable
(`chattr +i`) under a real run, a tmpfs that fills up under a real run. Watching never harms
training, a full disk is named, notifications never hold the run up, secrets stay secret."""

from __future__ import annotations

import os
import selectors
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cockpit.alerts.notify import END_WAIT_S, Notifier, send, send_all
from cockpit.run import diagnose, journal
from cockpit.run.folder import RunFolder
from helpers import PIPELINE, cockpit_cmd, demo_assets, fake_argv, fill_disk, gone, tmpfs_mount, wait_for

SECRET = "SECRET-7f3a9c"


class _BadServer:
    """A TCP server on 127.0.0.1 that either never answers (`hang`) or answers a line that is not
    HTTP (`garbage`). It stops by itself after `lifetime` seconds, and at close()."""

    def __init__(self, mode: str, lifetime: float = 120.0) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        self._stop = threading.Event()
        self._until = time.monotonic() + lifetime
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        while not self._stop.is_set() and time.monotonic() < self._until:
            if not sel.select(timeout=0.2):
                continue
            conn, _ = self.sock.accept()
            self.accepted += 1
            if self.mode == "garbage":
                try:
                    conn.recv(65536)
                    conn.sendall(b"HELLO THIS IS NOT HTTP\r\n\r\n")
                finally:
                    conn.close()
            else:
                self.held.append(conn)  # read nothing, answer nothing
        sel.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def hanging():
    server = _BadServer("hang")
    yield server
    server.close()


@pytest.fixture
def garbage():
    server = _BadServer("garbage")
    yield server
    server.close()


def _payload() -> dict:
    return {"run": "r1", "rule": "loss > 0", "key": "loss", "value": 1.0, "step": 3, "message": "loss is 1.0"}


# -- notifications -----------------------------------------------------------------------------


def test_a_hanging_webhook_and_a_garbage_ntfy_cost_their_own_lines_and_the_command_still_runs(
        tmp_path, hanging, garbage):
    marker = tmp_path / "command-ran"
    targets = [("webhook", hanging.url(f"/hook?token={SECRET}")),
               ("ntfy", garbage.url(f"/{SECRET}")),
               ("command", f"echo {SECRET} > {marker}; true")]
    results = send_all(targets, _payload(), timeout=1.0)
    by = {r["action"]: r for r in results}
    assert by["notify:webhook"]["ok"] is False and "timed out" in by["notify:webhook"]["detail"]
    assert by["notify:ntfy"] == {"action": "notify:ntfy", "ok": False, "detail": "BadStatusLine"}
    assert by["notify:command"] == {"action": "notify:command", "ok": True, "detail": "exit 0"}
    assert marker.read_text().strip() == SECRET  # the command ran, beside the two failures
    text = repr(results)
    assert SECRET not in text and "127.0.0.1" not in text  # targets are named by kind only
    assert hanging.accepted == 1 and garbage.accepted == 1


def test_a_notify_url_without_a_scheme_is_not_echoed():
    ok, detail = send("ntfy", f"ntfy.sh/{SECRET}", _payload())  # an env: value someone got wrong
    assert not ok and detail == "ValueError"
    ok, detail = send("webhook", f"http://127.0.0.1:9/{SECRET}", _payload())  # nothing listens on port 9
    assert not ok and SECRET not in detail and detail.startswith("URLError")


def test_a_notify_command_that_times_out_has_its_whole_process_group_killed(tmp_path):
    script = tmp_path / "notify.sh"
    script.write_text("sleep 300 &\necho $! > bg.pid\necho $$ > sh.pid\nwait\n", encoding="utf-8")
    ok, detail = send("command", f"cd {tmp_path} && sh {script} {SECRET}", _payload(), timeout=1.0)
    assert not ok and detail == "timed out after 1s (its process group was killed)"
    pids = [int((tmp_path / name).read_text()) for name in ("sh.pid", "bg.pid")]
    wait_for(lambda: all(gone(pid) for pid in pids), timeout=30)  # the background child too


def test_the_notifier_runs_jobs_off_the_callers_thread_and_drain_is_bounded():
    notifier = Notifier(max_queued=2)
    release = threading.Event()
    done: list[str] = []
    ran_on: list[str] = []

    def job(name: str):
        def run():
            ran_on.append(threading.current_thread().name)
            release.wait(30)
            done.append(name)
        return run

    dropped: list[str] = []
    assert notifier.submit(job("a"), dropped.append) and notifier.submit(job("b"), dropped.append)
    assert done == []  # submit returned without waiting for either
    wait_for(lambda: ran_on == ["cockpit-notify"], timeout=30)  # "a" is being sent, "b" waits behind it
    assert not notifier.drain(0.2)  # both still going: drain gives up, bounded, and says each dropped
    assert len(dropped) == 2 and all(why.startswith("dropped: not answered 0.2s after the run ended")
                                     for why in dropped)
    # "b" was not left behind the hanging "a": the end sent it at once, in a thread of its own
    assert sorted(ran_on) == ["cockpit-notify", "cockpit-notify-end"]
    release.set()
    assert notifier.drain(30) and sorted(done) == ["a", "b"]


# -- a full disk is named ----------------------------------------------------------------------


def test_a_save_time_error_on_a_nearly_full_disk_is_named_disk_full(tmp_path):
    low = diagnose.Diagnosis("error", "RuntimeError: [enforce fail] basic_ios::clear: iostream error", "see log")
    tail = "Traceback ...\nRuntimeError: [enforce fail at inline_container.cc:664] . basic_ios::clear: iostream error\n"
    # A disk with plenty free: a save error is only a save error.
    assert diagnose.disk_full(low, tail, [tmp_path]) == low
    # ENOSPC said anywhere is a full disk, with what is free where.
    said = diagnose.disk_full(diagnose.Diagnosis("error", "the trainer exited with code 1", ""),
                              "OSError: [Errno 28] No space left on device", [tmp_path])
    assert said.code == "disk_full" and said.reason.startswith("the disk is full (")
    assert " MB free on /" in said.reason and "cockpit resume" in said.fix


# -- real runs ---------------------------------------------------------------------------------


def _script_run(runs: Path, cwd: Path, *extra: str, max_steps: int, save_steps: int, sleep: float,
                alerts: Path | None = None) -> subprocess.Popen[str]:
    demo = demo_assets()
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--stage", "sft", "--max-steps", str(max_steps), "--save-steps", str(save_steps), "--sleep", str(sleep)]
    args = ["run", "--runs-dir", str(runs), *(["--alerts", str(alerts)] if alerts else []), *extra, "--", *cmd]
    return subprocess.Popen(cockpit_cmd(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)


def _fake_script_run(runs: Path, cwd: Path, *extra: str, steps: int, every: float,
                     alerts: Path | None = None) -> subprocess.Popen[str]:
    """`cockpit run -- ` the fake trainer (tests/helpers): the real supervisor, alerter and journal
    writer, for the faults whose subject is watching rather than training."""
    args = ["run", "--runs-dir", str(runs), *(["--alerts", str(alerts)] if alerts else []), *extra, "--",
            *fake_argv("--steps", str(steps), "--every", str(every))]
    return subprocess.Popen(cockpit_cmd(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)


def _run_of(proc: subprocess.Popen[str]) -> RunFolder:
    assert proc.stdout is not None and proc.stderr is not None  # PIPE, both
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read()[-2000:] if proc.poll() is not None else "no run folder printed"
    return RunFolder(Path(line))


def _stop_leftovers(run: RunFolder) -> None:
    """Whatever the test did, no process of the run is left behind."""
    status = run.read_status()
    for pgid in {status.pgid}:
        if pgid:
            try:
                os.killpg(pgid, 9)
            except (ProcessLookupError, PermissionError):
                pass
    if status.supervisor_pid:
        wait_for(lambda: gone(status.supervisor_pid), timeout=60)


def _metric_steps(run: RunFolder) -> list[int]:
    records, _ = journal.read_all(run.events)
    return [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]


@pytest.mark.proc
def test_notifications_to_a_hanging_webhook_never_hold_up_run_ended(tmp_path, runs_dir, hanging):
    rules = tmp_path / "alerts.yaml"
    rules.write_text(f"notify: {{webhook: '{hanging.url('/' + SECRET)}'}}\n"
                     "alerts:\n  - {metric: loss, above: 0.0, do: [notify]}\n"
                     "  - {event: run_ended, do: [notify]}\n", encoding="utf-8")
    proc = _fake_script_run(runs_dir, tmp_path, "--wait", steps=3, every=0, alerts=rules)
    run = _run_of(proc)
    try:
        proc.wait(timeout=600)
        assert run.read_status().state == "finished"
        status = run.read_status()
        wait_for(lambda: gone(status.supervisor_pid), timeout=60, every=0.1)  # it leaves, bounded, hang or not
        gone_at = time.time()
        records, _ = journal.read_all(run.events)
        kinds = [r.kind for r in records]
        ended_at = kinds.index(journal.RUN_ENDED)
        # gone within a few seconds of the run's end (it stayed 42-44 s): END_WAIT_S, then the sweep
        assert gone_at - records[ended_at].t < END_WAIT_S + 10, gone_at - records[ended_at].t
        alerts = {r.data["rule"]: (i, r) for i, r in enumerate(records) if r.kind == journal.ALERT}
        # run_ended went out when training ended; the run_ended notice's line came after: dropped, and said
        assert alerts["run_ended"][0] > ended_at
        (action,) = alerts["run_ended"][1].data["actions"]
        assert action["action"] == "notify:webhook" and not action["ok"]
        assert action["detail"].startswith("dropped: not answered 5s after the run ended"), action
        (action,) = alerts["loss > 0.0"][1].data["actions"] if "loss > 0.0" in alerts else next(
            rec.data["actions"] for rule, (_, rec) in alerts.items() if rule != "run_ended")
        assert not action["ok"] and ("timed out" in action["detail"] or action["detail"].startswith("dropped"))
        assert SECRET not in run.events.read_text() and SECRET not in run.status_json.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        _stop_leftovers(run)


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


def _can_chattr(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.write_text("x")
    try:
        _chattr("+i", probe)
    except (OSError, subprocess.CalledProcessError):
        return False
    _chattr("-i", probe)
    return True


@pytest.mark.proc
def test_an_immutable_journal_never_stops_training_and_catches_up(tmp_path, runs_dir):
    if not _can_chattr(tmp_path):
        pytest.skip("chattr +i does not work on this filesystem (or not as root)")
    proc = _fake_script_run(runs_dir, tmp_path, steps=20, every=0.5)  # 9 s after the lock: a system sample (5 s)
    run = _run_of(proc)
    locked = False
    try:
        proc.wait(timeout=60)
        wait_for(lambda: len(_metric_steps(run)) >= 2, timeout=300)
        _chattr("+i", run.events)
        locked = True
        # The supervisor's own writes fail too (a system sample every 5 s): it flags status.json.
        status = wait_for(lambda: (s := run.read_status()).journal_error and s, timeout=60)
        assert status.live and status.journal_error.startswith("EPERM")
        during = len(_metric_steps(run))
        wait_for(lambda: "cannot write the journal" in run.stdout_log.read_text(errors="replace"), timeout=60)
        _chattr("-i", run.events)
        locked = False
        wait_for(lambda: not run.read_status().live, timeout=300)
        status = run.read_status()
        assert status.state == "finished", status
        assert status.journal_error is None  # cleared when writes worked again
        steps = _metric_steps(run)
        assert steps == list(range(1, 21)) and during < 20  # every step, the held ones caught up
        log = run.stdout_log.read_text(errors="replace")
        assert "Traceback" not in log and "is writable again" in log
    finally:
        if locked:
            _chattr("-i", run.events)
        proc.stdout.close()
        proc.stderr.close()
        _stop_leftovers(run)


@pytest.fixture
def small_tmpfs(tmp_path):
    with tmpfs_mount(tmp_path / "small-disk", "24m") as mnt:
        yield mnt


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_a_full_disk_is_named_the_final_state_written_and_resume_works_once_space_is_freed(small_tmpfs):
    runs = small_tmpfs / "runs"
    work = small_tmpfs / "work"
    work.mkdir()
    filler = small_tmpfs / "filler"
    proc = _script_run(runs, work, max_steps=8, save_steps=2, sleep=0.5)
    run = _run_of(proc)
    try:
        proc.wait(timeout=60)
        wait_for(lambda: diagnose_ready(work), timeout=300)  # checkpoint-2 is whole
        fill_disk(filler)  # the disk fills while the run trains
        wait_for(lambda: not run.read_status().live, timeout=300)
        status = run.read_status()
        assert status.state == "failed", status
        assert status.reason.startswith("the disk is full (") and f"MB free on {small_tmpfs}" in status.reason
        assert "cockpit resume" in status.fix
        # Its own journal writes failed too, and said so; unless the journal's last page still had
        # room for the end's line (a full tmpfs refuses new pages, not bytes in one already held).
        ends = [r for r in journal.read_all(run.events)[0] if r.kind == "run_ended"]
        assert (status.journal_error or "").startswith("ENOSPC") or ends, status
        wait_for(lambda: gone(status.supervisor_pid), timeout=60)  # the supervisor ended its own way
        filler.unlink()  # space freed: resume picks up from checkpoint-2
        resumed = subprocess.run(cockpit_cmd("resume", run.path.name, "--runs-dir", str(runs), "--wait"),
                                 cwd=work, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        status = run.read_status()
        assert status.state == "finished" and status.journal_error is None
        assert max(_metric_steps(run)) == 8
    finally:
        proc.stdout.close()
        proc.stderr.close()
        filler.unlink(missing_ok=True)
        _stop_leftovers(run)
        shutil.rmtree(runs, ignore_errors=True)


def diagnose_ready(work: Path) -> bool:
    ckpt = work / "out" / "checkpoint-2"
    return (ckpt / "trainer_state.json").exists()


# -- the writer and the callback, in process ---------------------------------------------------


class _State:
    is_world_process_zero = True
    global_step = 3
    max_steps = 10
    epoch = 0.3


class _BadLogs(dict):
    def items(self):
        raise RuntimeError("a surprise in the logs")


def test_a_callback_whose_journal_is_a_folder_never_raises_and_catches_up_when_it_is_a_file(tmp_path, capsys):
    from cockpit.runner.callback import CockpitCallback

    events = tmp_path / "events.jsonl"
    events.mkdir()  # the file replaced by a folder: every open fails (EISDIR)
    writer = journal.JournalWriter(events)
    callback = CockpitCallback(RunFolder(tmp_path), writer)
    assert callback.on_log(None, _State(), None, logs={"loss": 1.5, "grad_norm": 0.3}) is None
    assert callback.on_log(None, _State(), None, logs=_BadLogs(loss=1.0)) is None  # a hook that raises
    err = capsys.readouterr().err
    assert err.count("cannot write the journal") == 1 and err.count("on_log failed, training goes on") == 1
    assert writer.trouble.startswith("EISDIR") and writer.pending > 0
    events.rmdir()
    assert writer.flush()  # the journal catches up, in order
    records, skipped = journal.read_all(events)
    assert skipped == 0 and [r.kind for r in records] == [journal.METRICS, journal.PROGRESS]
    assert records[0].data["loss"] == 1.5 and writer.trouble is None
    writer.close()


def test_the_writer_keeps_at_most_its_bound_and_counts_what_it_dropped(tmp_path, monkeypatch):
    events = tmp_path / "events.jsonl"
    events.mkdir()
    monkeypatch.setattr(journal.JournalWriter, "MAX_PENDING", 4096)
    heard: list[str | None] = []
    writer = journal.JournalWriter(events, on_trouble=heard.append)
    for step in range(200):
        writer.write(journal.metrics(step, {"loss": 1.0}))
    assert writer.pending <= 4096 and writer.lost > 0
    events.rmdir()
    writer.close()
    records, _ = journal.read_all(events)
    steps = [r.step for r in records if r.kind == journal.METRICS]
    assert steps == list(range(200 - len(steps), 200))  # the newest kept, in order
    assert records[-1].kind == journal.WARNING and records[-1].data["code"] == "journal_lost"
    assert heard[0].startswith("EISDIR") and heard[-1] is None


# -- C1: one odd logged value costs only itself --------------------------------------------------


class _RaisesOnItem:
    """A value whose .item() raises what torch raises for a tensor of several values."""

    def item(self):
        raise RuntimeError("a Tensor with 3 elements cannot be converted to Scalar")


def _odd(kind: str):
    if kind == "tensor":
        torch = pytest.importorskip("torch")
        return torch.tensor([1.0, 2.0, 3.0])  # .item(): RuntimeError, a Tensor with 3 elements
    return _RaisesOnItem()


@pytest.mark.parametrize("kind", ["raises", pytest.param("tensor", marks=pytest.mark.slow)])
def test_a_logged_value_whose_item_raises_is_skipped_and_every_other_metric_is_kept(tmp_path, capsys, kind):
    from cockpit.runner.callback import CockpitCallback

    writer = journal.JournalWriter(tmp_path / "events.jsonl")
    callback = CockpitCallback(RunFolder(tmp_path), writer)
    odd = _odd(kind)
    for step in range(1, 11):
        state = _State()
        state.global_step = step
        callback.on_log(None, state, None, logs={"loss": 2.0 / step, "per_token_loss": odd, "grad_norm": 0.5})
    writer.close()
    records, _ = journal.read_all(tmp_path / "events.jsonl")
    metrics = [r for r in records if r.kind == journal.METRICS]
    assert [r.step for r in metrics] == list(range(1, 11))  # 10 of 10 steps journaled
    assert all("per_token_loss" not in r.data and r.data["grad_norm"] == 0.5 for r in metrics)
    assert "failed, training goes on" not in capsys.readouterr().err  # nothing failed: the value was skipped


# -- C2: a journal deleted or replaced mid-run ---------------------------------------------------


def test_a_writer_whose_journal_is_deleted_or_replaced_reopens_it_and_says_so(tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    writer = journal.JournalWriter(events)
    writer.write(journal.metrics(1, {"loss": 1.0}))
    events.unlink()  # `rm events.jsonl`
    writer.write(journal.metrics(2, {"loss": 0.9}))
    records, _ = journal.read_all(events)
    assert [r.kind for r in records] == [journal.WARNING, journal.METRICS]
    assert records[0].data["code"] == "journal_replaced" and "was deleted" in records[0].data["message"]
    # An editor's save: a copy written beside it, then moved over it.
    copy = tmp_path / "x"
    copy.write_bytes(events.read_bytes())
    copy.rename(events)
    writer.write(journal.metrics(3, {"loss": 0.8}))
    writer.close()
    records, _ = journal.read_all(events)
    assert [r.step for r in records if r.kind == journal.METRICS] == [2, 3]
    assert [r.data["message"].split(" was ")[1][:8] for r in records if r.kind == journal.WARNING] == \
        ["deleted ", "replaced"]
    err = capsys.readouterr().err
    assert err.count("writing to a new one from here") == 2


WAITER = """
import os, sys, time
flag = sys.argv[1]
while not os.path.exists(flag):
    time.sleep(0.05)
"""


def _waiter_run(tmp_path: Path, runs: Path) -> tuple[RunFolder, Path]:
    from cockpit.launch.plan import launch_prepared
    from cockpit.launch.script import prepare_script

    flag = tmp_path / "flag"
    run = launch_prepared(prepare_script([sys.executable, "-c", WAITER, str(flag)], cwd=tmp_path,
                                         runs_dir=runs, name="waiter"))
    wait_for(lambda: (s := run.read_status()).state == "running" and s.pid_started, timeout=60)
    return run, flag


def _end_waiter(run: RunFolder, flag: Path) -> None:
    from cockpit.run import owner

    flag.touch()
    status = run.read_status()
    try:
        wait_for(lambda: status.supervisor_pid is None or gone(status.supervisor_pid), timeout=60)
    finally:
        for pid, started in ((status.pid, status.pid_started), (status.supervisor_pid, status.supervisor_started)):
            if pid is not None and owner.same_process(pid, started):
                os.kill(pid, 9)


@pytest.mark.parametrize("how", ["rm", "mv"])
def test_a_journal_deleted_or_replaced_under_a_live_run_is_reopened_and_its_end_is_in_it(tmp_path, runs_dir, how):
    run, flag = _waiter_run(tmp_path, runs_dir)
    try:
        if how == "rm":
            run.events.unlink()
        else:
            copy = run.path / "x"
            copy.write_bytes(run.events.read_bytes())
            copy.rename(run.events)
        # the supervisor's next system sample (every 5 s) notices, and writes into the new file
        wait_for(lambda: run.events.exists() and b"journal_replaced" in run.events.read_bytes(), timeout=30)
    finally:
        _end_waiter(run, flag)
    records, _ = journal.read_all(run.events)
    kinds = [r.kind for r in records]
    assert kinds[-1] == journal.RUN_ENDED and run.read_status().state == "finished"
    said = [r for r in records if r.kind == journal.WARNING and r.data["code"] == "journal_replaced"]
    assert len(said) == 1 and ("deleted" if how == "rm" else "replaced") in said[0].data["message"]
    assert "writing to a new one from here" in run.supervisor_log.read_text()


# -- C3: control/ replaced by a file -------------------------------------------------------------


def test_stop_and_force_stop_work_when_control_was_replaced_by_a_file(tmp_path, runs_dir):
    run, flag = _waiter_run(tmp_path, runs_dir)
    try:
        shutil.rmtree(run.control)
        run.control.write_text("not a folder\n")
        saved = subprocess.run(cockpit_cmd("stop", run.name, "--runs-dir", str(runs_dir)), capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert saved.returncode == 0, saved.stderr
        assert (run.control / "stop_save").is_file()  # control/ is a folder again, with the request in it
        shutil.rmtree(run.control)
        run.control.symlink_to(tmp_path)  # a link to a folder elsewhere: nothing is written there
        forced = subprocess.run(cockpit_cmd("stop", run.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir)),
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert forced.returncode == 0, forced.stderr
        assert forced.stdout.strip() == f"{run.name}: killed"
        assert not (tmp_path / "stop_force").exists() and not run.control.is_symlink()
    finally:
        _end_waiter(run, flag)
