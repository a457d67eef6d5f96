# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The trainers the installed TRL ships: discovered facts (`registry`) plus what cannot be
introspected, as data (`knowledge`)."""

from __future__ import annotations

import re

_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def camel_words(name: str) -> list[str]:
    """The words of a CamelCase class name: 'OnlineDPO' → ['Online', 'DPO'], 'AsyncGRPO' →
    ['Async', 'GRPO']. The one rule behind a trainer's name (the hook's `trainer_name`,
    discovery's `snake_case`) and its title (the registry's). Standard library only: the hook
    imports it in the user's process."""
    return _WORD_START.split(name)
