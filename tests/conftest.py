from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import pytest
import textual.constants

import helpers

# Textual's animations (a tab's underline sliding over, smooth scrolling) are not what any test is
# about, and every key a Pilot sends waits for them to end (~0.25 s a tab switch of the ~0.45 s).
# Off for every process the tests start (the environment), and for the apps made here: Textual
# read the variable when a pytest plugin imported it, before this file; an App takes its level
# from that constant when it is made.
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
textual.constants.TEXTUAL_ANIMATIONS = os.environ["TEXTUAL_ANIMATIONS"]  # type: ignore[misc,assignment]

# A user's Python keeps compiled modules, and pytest its rewritten test modules; this sandbox sets
# PYTHONDONTWRITEBYTECODE, so each of the hundreds of processes the suite starts (the CLI, supervisors,
# runners) compiled cockpit from source, and each worker rewrote every test module (collection
# 5.8 s against 2.2 s). The suite runs as on a user's machine (`__pycache__` is in .gitignore; the
# bench does the same for what it measures).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# One intra-op thread for torch in every process the suite starts (runners, scripts, samplers, the
# merger, the workers themselves). Three workers and their children share two cores, and each torch
# process otherwise starts a thread a core whose OpenMP workers spin between the tiny models' ops:
# three GRPO scripts at once took 49-53 s of CPU over 26-28 s with torch's default, 21-23 s over
# 12-13 s with one thread each (2-core EPYC). What a test trains is the same either way. A
# developer's own setting wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The workers' cyclic garbage collector. A worker runs hundreds of Textual apps one after another, and
# each app's widgets live long enough to reach the oldest generation, so Python's full collections
# kept walking everything the worker had imported and everything still alive: the 3 UI-heaviest
# modules took 171 s of CPU with Python's settings, 130 s with these (one process, 2-core EPYC).
# After collection the imported modules go to the permanent generation (`gc.freeze`), young
# collections run every 20,000 allocations instead of 700, and each test ends without the styles
# cache Textual keeps of the last 1,024 widgets drawn (`StylesCache.get_inner_outer` is an
# `lru_cache` on a method, so it holds the widgets' rendered lines; Textualize/textual#6665).
# None of it changes what a test sees; the processes the tests start keep Python's settings.
GC_YOUNG = 20_000


def pytest_collection_finish():
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG, 10, 10)


_COUNT_SAID: list[int] = []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under xdist, `pytest -q` says only "bringing up nodes..." before the dots: the number of tests
    (what each worker collected, after -k/-m) is said once, as pytest without workers says it."""
    if _COUNT_SAID:
        return
    _COUNT_SAID.append(len(ids))
    reporter = node.config.pluginmanager.getplugin("terminalreporter")
    workers = getattr(node.config.option, "numprocesses", None)
    if reporter is not None:
        reporter.write_line(f"collected {len(ids)} tests" + (f", run by {workers} workers" if workers else ""))


@pytest.fixture(autouse=True)
def _textual_styles_cache():
    yield
    from textual._styles_cache import StylesCache

    cached = getattr(StylesCache, "get_inner_outer", None)
    if hasattr(cached, "cache_clear"):  # a Textual that no longer caches it this way needs nothing
        cached.cache_clear()


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """The session's cockpit cache (demo assets, TRL schema): kept between sessions, keyed by the
    stack versions (tests/helpers); `COCKPIT_TEST_CACHE` names another, `=tmp` a fresh one."""
    cache = helpers.test_cache_dir(tmp_path_factory.mktemp)
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["COCKPIT_CACHE_DIR"] = str(cache)
    os.environ.setdefault("COCKPIT_CONFIG_DIR", str(tmp_path_factory.mktemp("cockpit-config")))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    yield


@pytest.fixture
def farm_run(tmp_path):
    """`farm_run(shape)`: a copy of the farm's run of that shape (tests/helpers.SHAPES) in
    `tmp_path/runs`, trained once per code version through the real supervisor. Only for tests
    whose subject is reading a finished run; the copy is the test's to change."""

    def take(shape: str, runs_dir: Path | None = None):
        return helpers.farm_copy(shape, runs_dir or tmp_path / "runs")

    return take


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under xdist (`--dist loadgroup`), the tests of a module that share a module- or class-scoped
    fixture (a trained run, a started cluster) go to one worker, so the fixture is built once; the
    slow tests go first (the same order on every worker)."""
    _leave_out_own_steps(config, items)
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or any(True for _ in item.iter_markers("xdist_group")):
            continue
        defs = [info.name2fixturedefs[name][-1] for name in info.names_closure if info.name2fixturedefs.get(name)]
        # a session fixture a test module defines for itself (one real TRL discovery) counts as the module's
        if any(d.scope in ("module", "class", "package") or (d.scope == "session" and d.baseid.endswith(".py"))
               for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # on every worker alike: the long ones first, no worker ends on one
        items.sort(key=lambda item: (item.get_closest_marker("slow") is None, not _many_examples(item)))


OWN_STEPS = {"crash_sweep": "tests/ui/test_ui_crash_hunt.py", "field": "tests/field"}
"""Markers of tests that `.ci/run` runs as steps of their own, after the suite: the crash hunt's
long sweep, and the field pass (`field`: every test in tests/field — real projects' scripts,
launchers, Slurm, the trainer matrix — and, in the folders of their kind, the tests that train a
run again or two at once: resumes, competing owners, a TUI killed and attached again; each a few
training processes). The suite (`python -m pytest`) leaves them out; `-m NAME` runs them, and so
does, for `field`, naming the field folder or the file (or test) a marked test is in."""


def _leave_out_own_steps(config, items) -> None:
    """What OWN_STEPS lists, unless `-m` names its marker, or (for `field`) the command line names
    the field folder (for a test there) or the marked test's own file."""
    field = (Path(config.rootpath) / OWN_STEPS["field"]).resolve()
    for item in items:
        if field in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.field)
    markexpr = config.getoption("markexpr", "") or ""
    named = [Path(a.split("::")[0]).resolve() for a in config.args]

    def asked(item, marker: str) -> bool:
        if marker != "field":
            return False
        path = Path(item.path).resolve()
        return path in named or (field in path.parents and any(p == field or field in p.parents for p in named))

    for marker in OWN_STEPS:
        if marker in markexpr:
            continue
        out = [item for item in items if item.get_closest_marker(marker) and not asked(item, marker)]
        if out:
            config.hook.pytest_deselected(items=out)
            left = set(map(id, out))
            items[:] = [item for item in items if id(item) not in left]


def _many_examples(item) -> bool:
    """A property test (Hypothesis): its examples add up (the literal-text ones ~100 s each), so it
    goes before the other in-process tests, not among the last."""
    from hypothesis import is_hypothesis_test

    return is_hypothesis_test(getattr(item, "obj", None))


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
