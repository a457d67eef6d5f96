"""`cockpit.runner.startup`: a training-side process's start, collected less — and nothing lost.

Each check runs in a fresh interpreter: the window changes the process's collector (and a pytest
worker has settings of its own, tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers import REPO


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_window_frees_young_cycles_freezes_what_lives_and_puts_the_thresholds_back():
    out = _run("""
        import gc, weakref
        from cockpit.runner import startup

        class Node:
            pass

        before = gc.get_threshold()
        with startup.heavy_start():
            inside = gc.get_threshold()
            kept = [Node() for _ in range(5_000)]          # what an import leaves alive
            dead = []
            for _ in range(200_000):                        # a set-up's short-lived cycles
                n = Node(); n.self = n
                if len(dead) < 5:
                    dead.append(weakref.ref(n))
            freed = sum(r() is None for r in dead)
        print(before == gc.get_threshold(), inside[0] > before[0], freed == 5,
              gc.get_freeze_count() >= len(kept), gc.isenabled())
    """)
    assert out.split() == ["True"] * 5


def test_a_second_start_frees_the_first_runs_garbage_before_it_freezes():
    """The trainer matrix trains 24 trainers in one process: a finished trainer's cycles are freed
    at the next start, not kept for good."""
    out = _run("""
        import gc, weakref
        from cockpit.runner import startup

        class Trainer:
            pass

        with startup.heavy_start():
            pass
        gc.disable()                     # so nothing but the next start can free it
        t = Trainer(); t.me = t
        ref = weakref.ref(t)
        del t
        with startup.heavy_start():
            print(ref() is None)
    """)
    assert out.split() == ["True"]
