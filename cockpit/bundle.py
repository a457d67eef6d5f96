"""Private copies of cockpit modules, for a process that runs on the user's Python.

Two things the cockpit starts run on a Python that is not its own: a script run's hook (inside the
user's training process, `cockpit.hook.bundle`) and the sampler and merger that load a script
run's checkpoints (`cockpit.launch.sampler`). Neither may see the cockpit's env: in a wheel install
the folder that holds `cockpit/` is the tool's whole site-packages (numpy, yaml, …), built for the
tool's Python, which the user's may not be. So each gets a folder of its own:

    <folder>/
      <private>/        the modules that process needs, copied from this cockpit

found by following the roots' imports (`closure`), with `cockpit.` rewritten to `<private>.` — a
private top-level name, so the copy neither shadows nor is shadowed by a `cockpit` the user's env
may have. The copies are made from the real modules, so there is one source of truth and nothing
hand-kept that can drift. This module is the ground: standard library only.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
"""This cockpit's package folder (…/cockpit)."""
_FROM = re.compile(r"^(\s*)from cockpit((?:\.[\w.]+)?) import ", re.M)
_PLACEHOLDER = '"""Copied by cockpit.bundle."""\n'


def module_file(name: str) -> Path | None:
    """cockpit.run.journal → .../cockpit/run/journal.py; a package → its __init__.py."""
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    if base.with_suffix(".py").is_file() and parts:
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def imports(path: Path) -> list[str]:
    """Every module a file imports (at the top and inside functions), `from a import b` as a.b when
    a.b is a module of cockpit's, else a."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
            if node.module.split(".")[0] == "cockpit":
                out.extend(f"{node.module}.{a.name}" for a in node.names
                           if module_file(f"{node.module}.{a.name}") is not None)
    return out


def closure(roots: Iterable[str]) -> dict[str, Path]:
    """The cockpit modules the roots need, by dotted name, with their files."""
    found: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = module_file(name)
        if path is None:
            continue
        found[name] = path
        todo.extend(m for m in imports(path) if m.split(".")[0] == "cockpit")
    return found


def outside_imports(roots: Iterable[str]) -> dict[str, set[str]]:
    """For each module of the closure, the top-level names of what it imports from outside cockpit."""
    return {name: {m.split(".")[0] for m in imports(path) if m.split(".")[0] != "cockpit"}
            for name, path in closure(roots).items()}


def rewrite(source: str, private: str) -> str:
    """`from cockpit.x import y` → `from <private>.x import y` (the only import form the closure uses)."""
    return _FROM.sub(lambda m: f"{m.group(1)}from {private}{m.group(2)} import ", source)


def contents(roots: Iterable[str], private: str) -> dict[str, str]:
    """The bundle's files, by path inside its folder: the rewritten closure, and an `__init__.py` for
    every package folder that has none in it."""
    files: dict[str, str] = {}
    for name, path in closure(roots).items():
        where = Path(private, *name.split(".")[1:])
        where = where / "__init__.py" if path.name == "__init__.py" else where.with_suffix(".py")
        files[where.as_posix()] = rewrite(path.read_text(encoding="utf-8"), private)
    for rel in list(files):
        parent = Path(rel).parent
        while parent != Path("."):
            files.setdefault((parent / "__init__.py").as_posix(), _PLACEHOLDER)
            parent = parent.parent
    return files


def _built(parent: Path, name: str, files: dict[str, str]) -> Path:
    """`files` written into a new folder beside where they go (renamed in by the caller)."""
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{name}."))
    try:
        for rel, text in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def write(dest: Path, files: dict[str, str]) -> Path:
    """Write `files` as the folder `dest`, replacing what is there (built beside it, then renamed in)."""
    dest = Path(dest)
    tmp = _built(dest.parent, dest.name, files)
    try:
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            dest.unlink()  # a link (or a file) in its place is removed, never followed: its target is not ours
        elif dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def cached(roots: Iterable[str], private: str, where: Path) -> Path:
    """The bundle of `roots` in a folder under `where` named by its contents: built the first time
    this cockpit's code needs it and never changed after, so a process already using it is never
    pulled from under (two cockpits of different code get two folders)."""
    files = contents(roots, private)
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + files[rel].encode() + b"\0")
    dest = Path(where) / f"{private}-{digest.hexdigest()[:16]}"
    if all((dest / rel).is_file() for rel in files):
        return dest
    if dest.exists():  # a folder someone emptied: it is rebuilt whole
        shutil.rmtree(dest, ignore_errors=True)
    tmp = _built(dest.parent, dest.name, files)
    try:
        os.rename(tmp, dest)
    except OSError:  # another process renamed the same folder in first
        shutil.rmtree(tmp, ignore_errors=True)
        if not all((dest / rel).is_file() for rel in files):
            raise
    return dest
