"""The hook's own folder: the only thing the cockpit puts on a watched command's PYTHONPATH.

A script-mode command runs on the user's Python, with the user's packages. Putting the cockpit's
root on its path (in a wheel install, the cockpit env's whole site-packages) made the script import
the cockpit env's numpy, torch and transformers, and fail outright on another Python. So the
supervisor builds a folder of its own in the run folder:

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

import ast
import os
import re
import shutil
import tempfile
from pathlib import Path

PRIVATE = "_cockpit_hook"
ROOTS = ("cockpit.hook",)
"""What the bootstrap imports; everything else follows from their imports."""
FOLDER = "hook"
"""The bundle's folder in the run folder."""
_PACKAGE = Path(__file__).resolve().parents[1]  # .../cockpit
_SITECUSTOMIZE = Path(__file__).resolve().parent / "site" / "sitecustomize.py"
_FROM = re.compile(r"^(\s*)from cockpit((?:\.[\w.]+)?) import ", re.M)


def _module_file(name: str) -> Path | None:
    """cockpit.run.journal → .../cockpit/run/journal.py; a package → its __init__.py."""
    parts = name.split(".")[1:]
    base = _PACKAGE.joinpath(*parts)
    if base.with_suffix(".py").is_file() and parts:
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports(path: Path) -> list[str]:
    """Every module a file imports (at the top and inside functions), `from a import b` as a.b when
    a.b is a module of cockpit's, else a."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
            if node.module.split(".")[0] == "cockpit":
                out.extend(f"{node.module}.{a.name}" for a in node.names
                           if _module_file(f"{node.module}.{a.name}") is not None)
    return out


def closure() -> dict[str, Path]:
    """The cockpit modules the hook needs in the user's process, by dotted name, with their files."""
    found: dict[str, Path] = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _module_file(name)
        if path is None:
            continue
        found[name] = path
        todo.extend(m for m in _imports(path) if m.split(".")[0] == "cockpit")
    return found


def outside_imports() -> dict[str, set[str]]:
    """For each module of the closure, the top-level names of what it imports from outside cockpit."""
    return {name: {m.split(".")[0] for m in _imports(path) if m.split(".")[0] != "cockpit"}
            for name, path in closure().items()}


def _rewrite(source: str) -> str:
    return _FROM.sub(lambda m: f"{m.group(1)}from {PRIVATE}{m.group(2)} import ", source)


def build(dest: Path) -> Path:
    """Write the hook's folder at `dest` (replacing what is there) and return it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        (tmp / "sitecustomize.py").write_text(_rewrite(_SITECUSTOMIZE.read_text(encoding="utf-8")),
                                              encoding="utf-8")
        for name, path in closure().items():
            rel = Path(*name.split(".")[1:])
            target = tmp / PRIVATE / (rel / "__init__.py" if path.name == "__init__.py" else rel.with_suffix(".py"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
        for folder in [tmp / PRIVATE, *(tmp / PRIVATE).rglob("*")]:
            if folder.is_dir() and not (folder / "__init__.py").exists():
                (folder / "__init__.py").write_text('"""Copied by cockpit.hook.bundle."""\n', encoding="utf-8")
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            dest.unlink()  # a link (or a file) in its place is removed, never followed: its target is not ours
        elif dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def child_env(run_dir: Path, env: dict[str, str], resume_from: Path | None = None) -> dict[str, str]:
    """The environment a script-mode command runs with: the hook's folder (built now, in the run
    folder) first on PYTHONPATH and nothing else of the cockpit's, the run folder, and the
    checkpoint to resume from."""
    from cockpit.hook import RESUME_ENV, RUN_DIR_ENV

    folder = build(Path(run_dir) / FOLDER)
    parts = [str(folder), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    out[RUN_DIR_ENV] = str(run_dir)
    if resume_from is not None:
        out[RESUME_ENV] = str(resume_from)
    else:
        out.pop(RESUME_ENV, None)
    return out
