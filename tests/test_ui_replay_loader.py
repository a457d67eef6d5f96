"""Replay files are parsed in a child process (from a fork server); what comes back equals parsing in-process."""

from __future__ import annotations

import numpy as np
import psutil
import pytest

from cockpit.errors import CockpitError
from cockpit.metrics import replay_loader
from conftest import FIXTURES


def test_child_parse_matches_in_process_parse():
    path = str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json")
    forked = replay_loader._load_in_child(path)
    assert forked is not None
    local = replay_loader.from_source(replay_loader.open_source(path))
    assert forked.store.keys() == local.store.keys()
    for key in local.store.keys():
        fx, fy = forked.store.series(key)
        lx, ly = local.store.series(key)
        assert np.array_equal(fx, lx) and np.array_equal(fy, ly, equal_nan=True)
    assert len(forked.log_rows.rows()) == len(local.log_rows.rows())


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


def _replay_files() -> set[str]:
    import os
    import tempfile

    d = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return {f for f in os.listdir(d) if f.startswith("cockpit-replay-")}


def test_a_prefetched_parse_is_what_load_replay_returns():
    path = str(FIXTURES / "trl_grpo_modern_multireward.json")
    before = _replay_files()
    replay_loader.prefetch(path)
    assert len(replay_loader._pending) == 1
    data = replay_loader.load_replay(path)
    assert not replay_loader._pending and _replay_files() == before
    local = replay_loader.from_source(replay_loader.open_source(path))
    assert data.store.keys() == local.store.keys()
    for key in local.store.keys():
        np.testing.assert_array_equal(data.store.series(key)[1], local.store.series(key)[1])


def test_a_prefetch_nobody_collects_leaves_nothing_behind():

    before = _replay_files()
    replay_loader.prefetch(str(FIXTURES / "trl_sft_token_accuracy.json"))
    child = next(iter(replay_loader._pending.values()))
    # Asked again while it runs (the CLI starts it, then the app's open_replay asks): the same one.
    replay_loader.prefetch(str(FIXTURES / "trl_sft_token_accuracy.json"))
    assert [c.pid for c in replay_loader._pending.values()] == [child.pid]
    for c in list(replay_loader._pending.values()):
        c.discard()  # what exit does
    replay_loader._pending.clear()
    assert _replay_files() == before
    assert not psutil.pid_exists(child.pid)  # reaped (by the fork server), not a zombie
