"""What a reward function needs from the data, read without importing it.

TRL calls a reward function with the prompts, the completions and every dataset column as keyword
arguments. A function with a parameter that has no default, beyond what the trainer passes itself
(`knowledge.REWARD_FUNC_GIVEN`), needs a column of that name: without it the run dies at its
first step (`accuracy_reward() missing 1 required positional argument: 'solution'`). Validation,
`--dry-run` and the setup form's data check ask here, so the data check matches the run.

Where a signature comes from, in the runner's own lookup order (`runner.build.load_reward_func`):
a `path/file.py:function` and cockpit's own `runner/rewards.py` are read as source (AST); a TRL
name from what discovery recorded of `trl.rewards`; a dotted path from its module's source, found
on sys.path without importing it. Anything else is not known here, and is left to the run.
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.config.presets import reward_file_ref
from cockpit.trainers.knowledge import REWARD_FUNC_GIVEN

_COCKPIT_REWARDS = Path(__file__).resolve().parents[1] / "runner" / "rewards.py"


@dataclass(frozen=True)
class RewardNeeds:
    """A reward function as validation sees it."""

    ref: str
    found: bool
    """Whether a function of that name was found where the reference points."""
    columns: tuple[str, ...] = ()
    """Dataset columns it needs (required parameters the trainer does not pass)."""
    factory: bool = False
    """A factory (`get_cosine_scaled_reward`): it returns a reward function and takes no completions."""
    where: str = ""


def _signature_from_source(path: Path, name: str) -> tuple[list[str], bool] | None:
    """(required parameter names, takes completions) of a top-level `def name` in a file; None when
    the file cannot be read or the name is not a plain function there."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8-sig"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            first_default = len(positional) - len(a.defaults)
            required = [p.arg for i, p in enumerate(positional) if i < first_default]
            required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
            named = {p.arg for p in (*positional, *a.kwonlyargs)}
            return required, "completions" in named or a.kwarg is not None
    return None


def _module_file(module: str) -> Path | None:
    """The source file of a dotted module name, found on sys.path (and the current folder, which the
    runner adds) without importing any of it."""
    parts = module.split(".")
    spec = importlib.machinery.PathFinder.find_spec(parts[0], [os.getcwd(), *sys.path])
    if spec is None:
        return None
    if len(parts) == 1:
        return Path(spec.origin) if spec.origin and spec.origin.endswith(".py") else None
    folders = list(spec.submodule_search_locations or [])
    for i, part in enumerate(parts[1:], start=1):
        last = i == len(parts) - 1
        nxt: list[str] = []
        for folder in folders:
            package = Path(folder) / part
            if (package / "__init__.py").is_file():
                if last:
                    return package / "__init__.py"
                nxt.append(str(package))
            elif last and (Path(folder) / f"{part}.py").is_file():
                return Path(folder) / f"{part}.py"
        folders = nxt
    return None


def reward_needs(ref: str, trl_rewards: dict[str, dict[str, Any]]) -> RewardNeeds | None:
    """What `ref` (a reward_funcs entry) needs from the data; None when it cannot be known here
    (a module that is not on this machine's path, a function built at import time)."""
    ref = str(ref)
    file_ref = reward_file_ref(ref)
    if file_ref is not None:
        path, func = file_ref
        if not path.is_file():
            return None  # validation names the missing file itself
        sig = _signature_from_source(path, func)
        return _needs(ref, sig, str(path)) if sig is not None else RewardNeeds(ref, False, where=str(path))
    sig = _signature_from_source(_COCKPIT_REWARDS, ref) if "." not in ref else None
    if sig is not None:
        return _needs(ref, sig, "cockpit")
    module, _, func = ref.rpartition(".")
    entry = trl_rewards.get(ref) or (trl_rewards.get(func) if module == "trl.rewards" or module ==
                                     (trl_rewards.get(func) or {}).get("module") else None)
    if entry is not None:
        required = [str(p) for p in entry.get("required") or ()]
        return RewardNeeds(ref, True, _columns(required), factory=bool(entry.get("factory")), where="trl.rewards")
    if module:
        source = _module_file(module)
        sig = _signature_from_source(source, func) if source is not None else None
        return _needs(ref, sig, str(source)) if sig is not None else None
    return RewardNeeds(ref, False) if trl_rewards else None


def _columns(required: list[str]) -> tuple[str, ...]:
    return tuple(p for p in required if p not in REWARD_FUNC_GIVEN)


def _needs(ref: str, sig: tuple[list[str], bool], where: str) -> RewardNeeds:
    required, takes_completions = sig
    return RewardNeeds(ref, True, _columns(required), factory=not takes_completions, where=where)


def cockpit_reward_names() -> list[str]:
    """The reward functions cockpit ships (`runner/rewards.py`), by name, read from its source."""
    try:
        tree = ast.parse(_COCKPIT_REWARDS.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def needed_columns(refs: list[Any], trl_rewards: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Dataset column → the reward functions that need it, for every entry of reward_funcs."""
    out: dict[str, list[str]] = {}
    for ref in refs:
        needs = reward_needs(str(ref), trl_rewards)
        for col in needs.columns if needs and not needs.factory else ():
            out.setdefault(col, []).append(str(ref))
    return out
