"""Import hygiene: the UI never loads the training stack, the core never loads Textual."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "transformers", "trl", "peft", "datasets")
UI_DIR = Path(__file__).resolve().parents[1] / "cockpit" / "ui"


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_every_ui_module_imports_without_the_training_stack():
    modules = sorted(
        "cockpit." + ".".join(p.relative_to(UI_DIR.parent).with_suffix("").parts)
        .replace(".__init__", "")
        for p in UI_DIR.rglob("*.py"))
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    code += "from cockpit.ui.app import make_app\nmake_app('home', [], '/nonexistent')\n"
    loaded = _loaded_after(code)
    assert "textual" in loaded  # the import really happened
    assert not loaded.intersection(HEAVY), loaded.intersection(HEAVY)


def test_core_imports_neither_textual_nor_torch():
    core = Path(__file__).resolve().parents[1] / "cockpit" / "core"
    modules = sorted(f"cockpit.core.{p.stem}" for p in core.glob("*.py") if p.stem != "__init__")
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    loaded = _loaded_after(code)
    assert not loaded.intersection({"textual", "textual_plotext", *HEAVY})
