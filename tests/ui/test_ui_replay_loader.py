"""Replay files are parsed in a child process (a fresh interpreter); what comes back equals parsing in-process."""

from __future__ import annotations

import numpy as np
import psutil
import pytest

from cockpit.errors import CockpitError
from cockpit.metrics import replay_loader
from helpers import FIXTURES


def _child_parses_as_in_process(path: str) -> None:
    child = replay_loader._load_in_child(path)
    assert child is not None
    local = replay_loader.from_source(replay_loader.open_source(path))
    assert child.store.keys() == local.store.keys()
    for key in local.store.keys():
        cx, cy = child.store.series(key)
        lx, ly = local.store.series(key)
        assert np.array_equal(cx, lx) and np.array_equal(cy, ly, equal_nan=True)
    assert len(child.log_rows.rows()) == len(local.log_rows.rows())


def test_child_parse_matches_in_process_parse():
    _child_parses_as_in_process(str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"))


def test_the_child_asks_for_huge_pages_where_glibc_can_and_keeps_the_users_settings(monkeypatch):
    monkeypatch.setattr(replay_loader, "_huge_pages", lambda: True)
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    env = replay_loader._child_env()
    assert env["PYTHONMALLOC"] == "malloc"
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc_debug")
    env = replay_loader._child_env()
    assert env["PYTHONMALLOC"] == "pymalloc_debug" and "hugetlb" not in env["GLIBC_TUNABLES"]
    monkeypatch.setattr(replay_loader, "_huge_pages", lambda: False)
    monkeypatch.delenv("PYTHONMALLOC")
    assert "PYTHONMALLOC" not in replay_loader._child_env()


def test_the_child_parses_the_same_with_pythons_own_allocator(monkeypatch):
    monkeypatch.setattr(replay_loader, "_huge_pages", lambda: False)
    _child_parses_as_in_process(str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"))


def test_child_errors_come_back_as_one_line(tmp_path):
    bad = tmp_path / "trainer_state.json"
    bad.write_text('{"log_history": [{"loss": 1, "st')
    with pytest.raises(CockpitError, match=r"trainer_state\.json"):
        replay_loader.load_replay(str(bad))


def test_in_process_parsing_can_be_asked_for(monkeypatch):
    monkeypatch.setenv("COCKPIT_REPLAY_IN_PROCESS", "1")
    def forked(*_args: object) -> None:  # where load_replay (and prefetch) start a child
        pytest.fail("parsed in a child although COCKPIT_REPLAY_IN_PROCESS asks for in-process")

    monkeypatch.setattr(replay_loader._Child, "start", forked)
    data = replay_loader.load_replay(str(FIXTURES / "trl_sft_token_accuracy.json"))
    assert "loss" in data.store.keys()


def _started(monkeypatch) -> list[str]:
    """The result files of the children the loader starts from now on (other tests' replays may
    run beside this one in another worker: /dev/shm as a whole is not this test's)."""
    names: list[str] = []
    real = replay_loader._Child.__dict__["start"].__func__  # the classmethod's function

    def start(cls, path):
        child = real(cls, path)
        if child is not None:
            names.append(child.name)
        return child

    monkeypatch.setattr(replay_loader._Child, "start", classmethod(start))
    return names


def _left(names: list[str]) -> list[str]:
    import os

    return [n for n in names if os.path.exists(n)]


def test_a_prefetched_parse_is_what_load_replay_returns(monkeypatch):
    path = str(FIXTURES / "trl_grpo_modern_multireward.json")
    started = _started(monkeypatch)
    replay_loader.prefetch(path)
    assert len(replay_loader._pending) == 1
    data = replay_loader.load_replay(path)
    assert len(started) == 1 and not replay_loader._pending and not _left(started)
    local = replay_loader.from_source(replay_loader.open_source(path))
    assert data.store.keys() == local.store.keys()
    for key in local.store.keys():
        np.testing.assert_array_equal(data.store.series(key)[1], local.store.series(key)[1])


def test_a_prefetch_nobody_collects_leaves_nothing_behind(monkeypatch):
    started = _started(monkeypatch)
    replay_loader.prefetch(str(FIXTURES / "trl_sft_token_accuracy.json"))
    child = next(iter(replay_loader._pending.values()))
    # Asked again while it runs (the CLI starts it, then the app's open_replay asks): the same one.
    replay_loader.prefetch(str(FIXTURES / "trl_sft_token_accuracy.json"))
    assert [c.pid for c in replay_loader._pending.values()] == [child.pid]
    for c in list(replay_loader._pending.values()):
        c.discard()  # what exit does
    replay_loader._pending.clear()
    assert len(started) == 1 and not _left(started)
    assert not psutil.pid_exists(child.pid)  # reaped, not a zombie


@pytest.mark.anyio
async def test_a_replay_opened_in_the_running_app_is_parsed_in_a_child(tmp_path, monkeypatch):
    """Issue 33: inside a running Textual app sys.stderr is Textual's capture (its fileno() is
    -1), where a multiprocessing fork server could not start (its resource tracker passes
    stderr's fd on), and the parse fell back to the app's own process, sharing the GIL with
    the screen composing. Opened from the app (as Home does), the file is parsed in a child."""
    from cockpit.ui.widgets.run.metric_plot import MetricPlot
    from helpers.ui import SIZE, app_for, app_wait

    real = replay_loader.from_source
    in_app: list[str] = []
    def from_source(source):  # the loader's in-process fallback, in this (the app's) process
        in_app.append(str(source.path))
        return real(source)

    monkeypatch.setattr(replay_loader, "from_source", from_source)
    started = _started(monkeypatch)
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        app.open_replay([str(FIXTURES / "trl_sft_token_accuracy.json")])
        plots = lambda: list(app.screen.query(MetricPlot))  # noqa: E731
        await app_wait(pilot, lambda: plots() and all(p.points_drawn for p in plots()), "the plots drawn")
    assert in_app == []
    assert started and not replay_loader._pending and not _left(started)


@pytest.mark.anyio
async def test_opening_a_replay_does_not_wait_on_the_judge(tmp_path, monkeypatch):
    """Issue 33: the first frame holds the plots; the judge (and the checkpoints listing) run
    after it, in workers, and the Findings tab fills in when the judge is done. The judge is
    held until the plots are on screen: were the first frame waiting on it, the plots would
    never come."""
    import threading

    from cockpit.ui.widgets.run import findings_pane
    from cockpit.ui.widgets.run.findings_pane import FindingsPane
    from cockpit.ui.widgets.run.metric_plot import MetricPlot
    from helpers.ui import SIZE, app_for, app_wait

    released = threading.Event()
    asked = threading.Event()
    def held(real):
        def held_judge(*args, **kwargs):
            asked.set()
            released.wait(30)
            return real(*args, **kwargs)
        return held_judge

    # The pane's two ways into the judge: the whole judgement, or the metric rules alone.
    monkeypatch.setattr(findings_pane, "judge_run", held(findings_pane.judge_run))
    monkeypatch.setattr(findings_pane, "examine", held(findings_pane.examine))
    app = app_for(tmp_path, "replay", [str(FIXTURES.parent / "findings" / "grpo-wasted-groups")])
    async with app.run_test(size=SIZE) as pilot:
        plots = lambda: list(app.screen.query(MetricPlot))  # noqa: E731
        await app_wait(pilot, lambda: plots() and all(p.points_drawn for p in plots()), "the plots drawn")
        assert not released.is_set()
        await app_wait(pilot, asked.is_set, "the judge asked after the first frame, unprompted")
        pane = app.screen.query_one(FindingsPane)
        assert "judging…" in str(pane.query_one("#findings-title").render()).lower()
        released.set()
        await app_wait(pilot, lambda: len(pane.findings) == 2, "the findings tab filled in")
        assert "judging…" not in str(pane.query_one("#findings-title").render()).lower()
