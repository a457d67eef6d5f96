from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "trainer_states"  # real public run logs: see PROVENANCE.md there


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Every test session gets its own cache (demo assets, TRL schema) unless one is given:
    COCKPIT_TEST_CACHE keeps it between sessions to save the asset build."""
    cache = os.environ.get("COCKPIT_TEST_CACHE") or str(tmp_path_factory.mktemp("cockpit-cache"))
    os.environ["COCKPIT_CACHE_DIR"] = cache
    os.environ.setdefault("COCKPIT_CONFIG_DIR", str(tmp_path_factory.mktemp("cockpit-config")))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    yield


@pytest.fixture
def runs_dir(tmp_path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def registry():
    from cockpit.trainers.registry import load_registry

    return load_registry()


@pytest.fixture
def anyio_backend():
    return "asyncio"


def cockpit_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cockpit.cli", *args]


def wait_for(pred, timeout: float = 240.0, every: float = 0.2):
    """Poll `pred` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting")


def stored_completions(run) -> list:
    """A run's completions as one `completions` record a step, read from its completions store;
    each journal pointer (`completions_ref`) must have its rows there."""
    from cockpit.metrics.completions import CompletionsLibrary
    from cockpit.run import journal

    lib = CompletionsLibrary(run.path)
    lib.refresh()
    records, _ = journal.read_all(run.events)
    refs = {r.step: r.data["count"] for r in records if r.kind == journal.COMPLETIONS_REF}
    out = []
    for step in lib.steps():
        rows = lib.rows(step)
        assert refs.get(step) == len(rows), (step, refs.get(step), len(rows))
        out.append(journal.Record(journal.COMPLETIONS, {"rows": rows, "source": rows[0]["source"] if rows else ""},
                                  step=step))
    return out
