"""A process the cockpit starts on the user's Python ends soon after the one that started it.

The sampler (`cockpit.runner.sample`) and the merger (`cockpit.runner.merge`) run in a process of
their own, started by `cockpit sample`, `cockpit merge` or the TUI. A SIGKILLed (or SIGTERMed)
parent does not take them along: a sampler loading a model or blocked on a read, or a merger
writing a model, would go on for minutes, holding the model's memory. Both start `end_with_parent`
first thing. Standard library only, Python 3.9+: this runs in the private bundle
(`cockpit.bundle`), on the user's Python.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

PARENT_POLL_S = 0.5
"""How often the watch looks whether the process that started this one is still there."""


def end_with_parent(who: str, on_end: Callable[[], None] | None = None, every: float = PARENT_POLL_S) -> None:
    """End this process (exit 1) soon after its parent is gone, whatever it is doing then, with one
    line `cockpit WHO: the process that started it is gone — ending` on stderr (its log), after
    `on_end` (what must not be left behind: a half-written folder).

    A daemon thread polls the parent's pid (os.getppid changes when the parent dies and the process
    is handed to init or a subreaper); not PR_SET_PDEATHSIG, which fires when the parent's *thread*
    ends, and the TUI starts the sampler from a worker thread that ends while the sampler must live
    on for a chat's next turn."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        try:
            if on_end is not None:
                on_end()
            sys.stderr.write(f"cockpit {who}: the process that started it is gone — ending\n")
            sys.stderr.flush()
        finally:
            os._exit(1)

    if parent > 1:  # a parent already gone (handed to init): the sampler's pipes end, a merge runs on
        threading.Thread(target=watch, name=f"cockpit-{who}-parent", daemon=True).start()
