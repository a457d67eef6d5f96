"""cockpit's script-mode bootstrap, first on a watched command's PYTHONPATH.

`cockpit.hook.bundle` copies it into the run folder's `hook/` beside `_cockpit_hook` (the hook's
private copy, which the import below names once copied). It runs on the user's Python: the
standard library only.

Python imports one `sitecustomize` at start-up; this one runs the user's own (the next one on
sys.path), then, when `COCKPIT_RUN_DIR` is set, installs the hook that puts the cockpit's callback
into every transformers Trainer. Any failure here prints one line and leaves the program alone.
"""

import importlib.machinery
import importlib.util
import os
import sys


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

if os.environ.get("COCKPIT_RUN_DIR"):  # cockpit.run.RUN_DIR_ENV, spelled here: the hook is not imported yet
    try:
        from cockpit.hook import install_import_hook

        install_import_hook()
    except Exception as exc:  # noqa: BLE001
        print(f"cockpit: not watching this process: {type(exc).__name__}: {exc}", file=sys.stderr)
