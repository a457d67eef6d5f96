# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""cockpit's script-mode bootstrap, first on a watched command's PYTHONPATH.

`cockpit.hook.bundle` copies it into the run folder's `hook/` beside `_cockpit_hook` (the hook's
private copy, which the import below names once copied). It runs on the user's Python: the
standard library only.

Python imports one `sitecustomize` at start-up; this one runs the user's own (the next one on
sys.path), then, when `COCKPIT_RUN_DIR` is set, installs the hook that puts the cockpit's callback
into every transformers Trainer. Any failure here prints one line and leaves the program alone.
The hook's own modules are loaded without writing their bytecode into the run folder.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType


def _chain_users_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _chain_users_sitecustomize()
except Exception as exc:  # noqa: BLE001
    # cockpit.errors.failure's line, spelled here: nothing of the cockpit is imported before the
    # user's own sitecustomize has run, nor when the hook's own import is what failed (below).
    print(f"cockpit: your sitecustomize failed: {type(exc).__name__}: {exc}", file=sys.stderr)


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """Loads a module of the hook's without caching its bytecode: Python would write it under the
    path the run folder had when this process started, making again whatever of that path is
    missing, so a run folder moved meanwhile would be half made again where it was."""

    def set_data(self, *args: object, **kwargs: object) -> None:
        pass


class _OwnModules:
    """First on sys.meta_path: the modules of the packages in this folder (the hook's), found as
    Python finds them, loaded by `_SourceOnly`. Every other import is left to Python."""

    def __init__(self, folder: str) -> None:
        self.own = {n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n, "__init__.py"))}

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name.partition(".")[0] not in self.own:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _SourceOnly(spec.loader.name, spec.loader.path)
        return spec


if os.environ.get("COCKPIT_RUN_DIR"):  # cockpit.run.RUN_DIR_ENV, spelled here: the hook is not imported yet
    try:
        sys.meta_path.insert(0, _OwnModules(os.path.dirname(os.path.abspath(__file__))))
        from cockpit.hook import install_import_hook

        install_import_hook()
    except Exception as exc:  # noqa: BLE001
        print(f"cockpit: not watching this process: {type(exc).__name__}: {exc}", file=sys.stderr)
