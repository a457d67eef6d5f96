# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""Version facts: which TRL lines the cockpit reads, what each keeps where, which range presets run on.

The hook reads a trainer built by the user's own TRL, which may be years older than the cockpit's.
What differs between the lines people are pinned to is kept here as data, measured by reading
each release's source (`pip download --no-deps trl==X`, `trl/trainer/grpo_trainer.py`) and proven
by the CI matrix (`.ci/run`, `tests/field/test_trl_lines.py`). Standard library only: the hook imports
this module inside the user's process, on whatever Python that runs (3.9 for TRL 0.18 / 0.19).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STACK = ("trl", "transformers", "torch", "peft", "accelerate", "datasets")
"""The packages a run's `run_started` record reports the versions of."""


@dataclass(frozen=True)
class TrlLine:
    """One TRL line users are pinned to, with the transformers it is tested with."""

    trl: str
    transformers: str
    python: str
    """The oldest Python the line's TRL and transformers install on."""
    sampled_batch: str
    """The GRPO-family trainer attribute holding the last sampled batch: a dict of `prompt`,
    `completion`, `rewards` ({reward function name: values}) and `advantages`."""
    who: str
    """Who pins it (why it is in the matrix)."""


TRL_LINES: tuple[TrlLine, ...] = (
    TrlLine("0.18.0", "4.52.3", "3.9", "_textual_logs", "open-r1"),
    TrlLine("0.19.1", "4.53.3", "3.9", "_textual_logs", "alignment-handbook"),
    TrlLine("0.24.0", "4.56.2", "3.9", "_logs", "the 0.2x line"),
    TrlLine("1.0.0", "4.56.2", "3.10", "_logs", "the first 1.x"),
    TrlLine("1.12.0", "5.23.0", "3.10", "_logs", "the last TRL with PPO"),
    TrlLine("1.16.0", "5.23.0", "3.10", "_logs", "the newest"),
)
"""The matrix: each line's SFT, GRPO and DPO scripts run under `cockpit run` in CI."""

SAMPLED_BATCH_RENAMED_IN = "0.20"
"""TRL 0.20 renamed GRPO's `_textual_logs` to `_logs` (same keys)."""

PRESET_RANGE = {"trl": "1.0.0", "transformers": "4.56.2"}
"""The oldest trl and transformers preset mode (the runner, the demo's assets, the presets) is
proven on: pyproject's [train] floor, which `.ci/run` installs to run the demo presets. (TRL 1.0.0
itself requires transformers >= 4.56.2.)"""


def parse(version: str) -> tuple[int, ...]:
    """"0.19.1" → (0, 19, 1), "5.0.0rc1" → (5, 0, 0): the numeric release, enough to order lines.
    The hook's own, for the user's process, where packaging may be missing; the cockpit's process
    orders versions with `packaging.version` (the registry, `discovery.preset_range_problem`)."""
    out = []
    for part in version.split("."):
        m = re.match(r"\d+", part)
        if m is None:
            break
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)


def sampled_batch_attrs(trl_version: str | None) -> tuple[str, ...]:
    """Where a GRPO-family trainer of this TRL keeps its sampled batch, the line's own name first.
    The other name comes second: some trainers kept it after the rename (TRL 1.16's experimental
    GOLD and IW-OPD trainers still fill `_textual_logs`)."""
    renamed = not trl_version or parse(trl_version) >= parse(SAMPLED_BATCH_RENAMED_IN)
    return ("_logs", "_textual_logs") if renamed else ("_textual_logs", "_logs")


def installed() -> dict[str, str]:
    """The installed versions of the training stack (from package metadata: imports none of it)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in STACK:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out
