"""The hook's own folder: the only thing the cockpit puts on a watched command's PYTHONPATH.

A script-mode command runs on the user's Python, with the user's packages. Putting the cockpit's
root on its path (in a wheel install, the cockpit env's whole site-packages) made the script import
the cockpit env's numpy, torch and transformers, and fail outright on another Python. So the
supervisor builds a folder of its own in the run folder (`cockpit.bundle` makes it):

    <run>/hook/
      sitecustomize.py        the hook's bootstrap (cockpit/hook/site/sitecustomize.py)
      _cockpit_hook/          the hook and the modules it imports, copied from this cockpit

`_cockpit_hook` is a private top-level name, so it never shadows, nor is shadowed by, a `cockpit`
the user's env may have. The copies are made from the real modules at each launch, found by
following the hook's imports (`closure`), with `cockpit.` rewritten to `_cockpit_hook.`: there is
one source of truth, and nothing hand-kept that can drift. Every module in the closure imports only
the standard library, transformers (which the script itself imports) and what it guards (orjson
when the script's env has it; PyYAML in functions the hook never calls).
"""

from __future__ import annotations

import os
from pathlib import Path

from cockpit import bundle as _bundle

PRIVATE = "_cockpit_hook"
ROOTS = ("cockpit.hook",)
"""What the bootstrap imports; everything else follows from their imports."""
FOLDER = "hook"
"""The bundle's folder in the run folder."""
_SITECUSTOMIZE = Path(__file__).resolve().parent / "site" / "sitecustomize.py"


def closure() -> dict[str, Path]:
    """The cockpit modules the hook needs in the user's process, by dotted name, with their files."""
    return _bundle.closure(ROOTS)


def outside_imports() -> dict[str, set[str]]:
    """For each module of the closure, the top-level names of what it imports from outside cockpit."""
    return _bundle.outside_imports(ROOTS)


def build(dest: Path) -> Path:
    """Write the hook's folder at `dest` (replacing what is there) and return it."""
    files = _bundle.contents(ROOTS, PRIVATE)
    files["sitecustomize.py"] = _bundle.rewrite(_SITECUSTOMIZE.read_text(encoding="utf-8"), PRIVATE)
    return _bundle.write(Path(dest), files)


def child_env(run_dir: Path, env: dict[str, str], resume_from: Path | None = None) -> dict[str, str]:
    """The environment a script-mode command runs with: the hook's folder (built now, in the run
    folder) first on PYTHONPATH and nothing else of the cockpit's, the run folder, and the
    checkpoint to resume from."""
    from cockpit.hook import RESUME_ENV, RUN_DIR_ENV, TRAIN_ARGS_ENV

    folder = build(Path(run_dir) / FOLDER)
    parts = [str(folder), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    out[RUN_DIR_ENV] = str(run_dir)
    if resume_from is not None:
        out[RESUME_ENV] = str(resume_from)
    else:
        out.pop(RESUME_ENV, None)
    asked = train_args(Path(run_dir))
    if asked:
        import json

        out[TRAIN_ARGS_ENV] = json.dumps(asked)
    else:
        out.pop(TRAIN_ARGS_ENV, None)
    return out


def train_args(run_dir: Path) -> dict | None:
    """run.yaml's `cockpit.script.train_args` ({segment, set}: what `cockpit resume --set` asked),
    or None: the hook applies it to that Trainer's arguments at train()."""
    from cockpit.run.folder import RunFolder
    from cockpit.run.section import script_section

    script = script_section(RunFolder(run_dir))
    asked = script.train_args if script is not None else None
    return asked.model_dump() if asked is not None and asked.set else None
