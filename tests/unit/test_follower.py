"""The one follower (`metrics/follow.py`): what the live screen, a replay's followed sources and
`cockpit watch` take their updates from. Real files, written while it follows them."""

from __future__ import annotations

import threading
import time

from cockpit.metrics.follow import RunFollower
from cockpit.run import journal
from cockpit.run.folder import Status, create_run_folder
from cockpit.run.trainer_output import readable_lines


def _run(tmp_path, state: str = "running"):
    run = create_run_folder(tmp_path / "runs", "followed")
    run.run_yaml.write_text("trainer: sft\n", encoding="utf-8")
    run.write_status(Status(state=state, name=run.name, trainer="sft", started=time.time()))
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.run_started("sft", max_steps=10), journal.metrics(1, {"loss": 2.0})])
    return run


def test_a_run_is_read_whole_then_followed_until_it_ends(tmp_path):
    run = _run(tmp_path)
    run.stdout_log.write_bytes(b"cut line\nfirst\n")
    follower = RunFollower(run, output=True, until_ended=True, poll_s=0.01, status_s=0.05)
    opened = follower.open()
    assert opened.data.store.last_step == 1 and opened.state == "running" and opened.following
    assert opened.output == ["cut line", "first"]

    def train() -> None:  # another process's writes, as the trainer and the supervisor make them
        time.sleep(0.1)
        with journal.JournalWriter(run.events) as jw:
            jw.write_all([journal.metrics(2, {"loss": 1.5}), journal.metrics(3, {"loss": 1.2})])
        with run.stdout_log.open("ab") as fh:
            fh.write(b"Training:  50%|#####     | 5/10 [00:01<00:01, 4.0it/s]\r"
                     b"Training: 100%|##########| 10/10 [00:02<00:00, 4.1it/s]\n")
        time.sleep(0.1)
        run.write_status(Status(state="finished", name=run.name, trainer="sft", started=time.time()))

    writer = threading.Thread(target=train)
    writer.start()
    deadline = time.monotonic() + 30
    records, output, states = [], [], []
    for update in follower.updates(lambda: time.monotonic() > deadline):
        records += update.records
        output += update.output
        if update.state is not None:
            states.append(update.state)
    writer.join()
    assert [r.step for r in records if r.kind == journal.METRICS] == [2, 3]
    assert output == ["Training: 100%|##########| 10/10 [00:02<00:00, 4.1it/s]"]  # the bar's last state
    assert states == ["finished"] and follower.ended  # it stopped on its own once the run ended


def test_a_followed_run_whose_status_is_damaged_says_so_once(tmp_path):
    run = _run(tmp_path)
    follower = RunFollower(run, poll_s=0.01, status_s=0.0)
    follower.open()
    run.status_json.write_text("{not json", encoding="utf-8")
    problems = [u.problem for u in (follower.poll() for _ in range(5)) if u.problem]
    assert len(problems) == 1 and "status.json" in problems[0]


def test_stdout_lines_read_as_a_person_reads_them():
    raw = [b"\x1b[32mplain\x1b[0m", b"header\r 10%|#  | 1/10 [00:00<00:09]\r 20%|## | 2/10 [00:01<00:08]",
           b"bar [00:00]\rbar done [00:01, 5.0it/s]table starts", b"\x07bell"]
    assert readable_lines(raw) == ["plain", "header", " 20%|## | 2/10 [00:01<00:08]",
                                   "bar done [00:01, 5.0it/s]", "table starts", "·bell"]


def test_a_follower_gives_freed_memory_back_after_opening_and_every_so_many_records(tmp_path, monkeypatch):
    """glibc keeps what Python frees; a follower asks it to give that back after the whole journal
    is read, each TRIM_EVERY_RECORDS records after, and when a burst of records is over
    (bench: follow_72h_rss_growth_mb)."""
    import sys

    from cockpit.metrics import follow

    monkeypatch.setattr(follow, "TRIM_EVERY_RECORDS", 5)
    run = _run(tmp_path)
    follower = RunFollower(run, poll_s=0.01, status_s=0.0)
    follower.open()
    glibc = sys.platform.startswith("linux") and follow.give_back_freed_memory()
    assert follower.trims == int(glibc)
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.metrics(s, {"loss": 1.0 / s}) for s in range(2, 6)])  # 4: not yet
    assert len(follower.poll().records) == 4 and follower.trims == int(glibc)
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.metrics(6, {"loss": 0.1}))
    assert len(follower.poll().records) == 1 and follower.trims == 2 * int(glibc)
    # a burst below TRIM_EVERY_RECORDS, given back once a poll finds nothing (TRIM_IDLE_RECORDS)
    monkeypatch.setattr(follow, "TRIM_IDLE_RECORDS", 3)
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.metrics(s, {"loss": 1.0 / s}) for s in range(7, 10)])
    assert len(follower.poll().records) == 3 and follower.trims == 2 * int(glibc)
    assert not follower.poll().records and follower.trims == 3 * int(glibc)
    assert not follower.poll().records and follower.trims == 3 * int(glibc)  # once


# -- a long journal's first look ------------------------------------------------------------------


def _long_run(tmp_path, steps: int = 3000):
    run = create_run_folder(tmp_path / "runs", "long")
    run.run_yaml.write_text("trainer: sft\n", encoding="utf-8")
    run.write_status(Status(state="running", name=run.name, trainer="sft", started=time.time()))
    records = [journal.run_started("sft", max_steps=5000), journal.phase("training")]
    for s in range(1, steps + 1):
        records += [journal.metrics(s, {"loss": 2.0 / s, "reward": s / steps}, epoch=s / 1000),
                    journal.progress(s, 5000, steps_per_s=2.0, eta_s=(5000 - s) / 2)]
        if s % 1000 == 0:
            records.append(journal.warning(f"a warning at step {s}", step=s))
    with journal.JournalWriter(run.events) as jw:
        jw.write_all(records)
    return run


def test_a_long_journal_is_first_looked_at_by_its_ends_then_read_whole_and_followed(tmp_path, monkeypatch):
    """The live screen's first frame of a long run (bench: attach_100k_grpo_s): its start (the
    header's run_started and phase) and its newest steps, said to be so (`tail_from`); then the
    whole read, and the follow on from where that read ended: nothing lost, nothing twice."""
    from cockpit.metrics import follow

    run = _long_run(tmp_path)
    size = run.events.stat().st_size
    assert RunFollower(run).first_look() is None  # a short journal: read whole at once
    monkeypatch.setattr(follow, "FIRST_LOOK_BYTES", size // 4)
    monkeypatch.setattr(follow, "HEAD_BYTES", 1000)  # cut inside a line: complete lines only
    monkeypatch.setattr(follow, "TAIL_BYTES", size // 10)
    follower = RunFollower(run, poll_s=0.01)
    first = follower.first_look()
    assert first is not None and first.first_look and first.state == "running"
    look = first.data
    assert 2500 < look.tail_from < 3000 and look.trainer == "sft" and look.phase == "training"
    steps, _ = look.store.series("loss")
    assert list(steps) == list(range(look.tail_from, 3001))  # the newest steps, none from the head
    assert (look.step, look.max_steps, look.eta_s) == (3000, 5000, 1000.0)
    assert follower.tailer.offset == 0  # the first look leaves the follow to the whole read

    opened = follower.open()
    whole = opened.data
    assert not opened.first_look and whole.tail_from is None
    assert list(whole.store.series("loss")[0]) == list(range(1, 3001))
    assert [a.step for a in whole.alerts] == [1000, 2000, 3000]
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.metrics(s, {"loss": 2.0 / s}) for s in range(3001, 3011)])
    whole.apply(follower.poll().records)
    assert list(whole.store.series("loss")[0]) == list(range(1, 3011))
