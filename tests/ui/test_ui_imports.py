"""Import hygiene: the UI never loads the training stack, the core never loads Textual."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "transformers", "trl", "peft", "datasets")
UI_DIR = Path(__file__).resolve().parents[2] / "cockpit" / "ui"


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.proc
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


CORE_PACKAGES = ("run", "launch", "findings", "supervisor", "trainers", "config", "metrics", "alerts", "demo")
"""Everything that is neither the UI nor training-side code: no Textual, no torch."""
TRAINING_SIDE = ("runner", "hook")
"""The only packages that may import torch, transformers, trl, peft, datasets or accelerate."""
FRONT_ENDS = ("ui", "cli", "agent")
"""What users run: the TUI (the first test), the CLI, which is core-clean at import (the core
test imports every module of it) and opens the TUI only inside its commands, and the MCP server
for agents (`cockpit mcp`: core-clean too, the `mcp` SDK its only addition)."""


def _modules_of(package: str) -> list[str]:
    root = Path(__file__).resolve().parents[2] / "cockpit" / package
    return sorted(f"cockpit.{package}." + ".".join(p.relative_to(root).with_suffix("").parts)
                  for p in root.rglob("*.py") if p.stem not in ("__init__", "__main__"))


@pytest.mark.proc
def test_core_imports_neither_textual_nor_torch():
    modules = ["cockpit", "cockpit.errors", "cockpit.paths", "cockpit.files", "cockpit.cli", "cockpit.hook",
               *_modules_of("cli"), "cockpit.agent", *_modules_of("agent")]
    for package in CORE_PACKAGES:
        modules += _modules_of(package)
    assert len(modules) > 30
    assert "cockpit.metrics.store.rows" in modules  # subpackages are walked too
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    loaded = _loaded_after(code)
    assert not loaded.intersection({"textual", "textual_plotext", *HEAVY}), loaded.intersection(
        {"textual", "textual_plotext", *HEAVY})


def test_only_the_runner_and_the_hook_import_the_training_stack():
    """A static check over every source file: torch/transformers/trl/peft/datasets appear only in
    cockpit/runner/ and cockpit/hook/ (inside functions there, where heavy imports belong)."""
    import re

    pattern = re.compile(r"^\s*(from|import)\s+(torch|transformers|trl|peft|datasets|accelerate)\b", re.M)
    root = Path(__file__).resolve().parents[2] / "cockpit"
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if pattern.search(p.read_text(encoding="utf-8")) and p.relative_to(root).parts[0] not in TRAINING_SIDE]
    assert not offenders, offenders


def test_every_package_belongs_to_a_layer_the_tests_above_check():
    """A new folder under cockpit/ must be named here, so the layer checks cover it."""
    root = Path(__file__).resolve().parents[2] / "cockpit"
    packages = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    layers = {*CORE_PACKAGES, *TRAINING_SIDE, *FRONT_ENDS}
    assert packages == layers, packages ^ layers


CALLBACK_MODULES = ("cockpit.runner.callback", "cockpit.hook.callback", "cockpit.hook.public")
"""They subclass transformers' TrainerCallback, so they import it at the top."""


@pytest.mark.proc
def test_training_side_modules_import_the_training_stack_only_inside_functions():
    """Discovery, the demo assets, the runner's build steps import fast and light: torch and
    friends load when a function that needs them runs (each module in its own process)."""
    modules = [m for package in TRAINING_SIDE for m in _modules_of(package) if m not in CALLBACK_MODULES]
    assert {"cockpit.runner.build", "cockpit.runner.discover", "cockpit.runner.models"} <= set(modules)
    for module in modules:
        loaded = _loaded_after(f"import {module}")
        assert not loaded.intersection({*HEAVY, "accelerate", "textual"}), (module, loaded.intersection(
            {*HEAVY, "accelerate", "textual"}))


# The floors, lowest first: a package may import only those on its own floor's left. The ground
# (errors, paths, files, formats, bundle, text) imports nothing of cockpit's but itself.
FLOORS = (("errors", "paths", "files", "formats", "bundle", "text"), ("run",), ("trainers", "demo"), ("alerts",),
          ("config",), ("metrics",), ("findings",), ("launch",), ("runner",), ("hook",), ("supervisor",),
          ("ui", "agent"), ("cli",))


def _package_graph() -> dict[str, set[str]]:
    """Which top-level package of cockpit imports which, from the source (AST): every `import`,
    at the top or inside a function, relative imports resolved."""
    import ast

    root = Path(__file__).resolve().parents[2] / "cockpit"
    packages = {p.name.removesuffix(".py") for p in root.iterdir()
                if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__")}
    graph: dict[str, set[str]] = {p: set() for p in packages}
    for f in root.rglob("*.py"):
        rel = f.relative_to(root).parts
        source = rel[0].removesuffix(".py")
        if source not in graph:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                base = list(rel[:-1])[: len(rel) - node.level]
                names = [".".join(["cockpit", *base, node.module or ""])]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.module == "cockpit":
                    names += [f"cockpit.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if len(parts) >= 2 and parts[0] == "cockpit" and parts[1] in graph and parts[1] != source:
                    graph[source].add(parts[1])
    return graph


def test_no_two_packages_import_each_other_directly_or_through_others():
    graph = _package_graph()
    assert {"run", "launch", "config", "files"} <= set(graph)
    reach = {p: set(edges) for p, edges in graph.items()}
    changed = True
    while changed:  # transitive closure; a handful of packages, so plain iteration is enough
        changed = False
        for seen in reach.values():
            more = set().union(*(reach[q] for q in seen)) - seen
            if more:
                seen |= more
                changed = True
    circles = sorted({tuple(sorted((a, b))) for a in reach for b in reach[a] if a in reach[b]})
    assert not circles, f"packages that reach each other: {circles}"


def test_each_package_imports_only_from_the_floors_below_it():
    """The floors say where a new import may go: the run-folder contract under everything, launching
    above config and alerts, the front ends on top."""
    floor = {p: i for i, names in enumerate(FLOORS) for p in names}
    graph = _package_graph()
    assert set(graph) == set(floor), set(graph) ^ set(floor)
    upward = sorted(f"{a} -> {b}" for a, edges in graph.items() for b in edges if floor[b] >= floor[a])
    assert not upward, upward
