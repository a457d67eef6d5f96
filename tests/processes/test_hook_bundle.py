"""The hook stands alone in the user's process: its folder holds exactly the modules it imports,
they need only the standard library (and transformers, which the script brings), they import on
the oldest Python a supported TRL line runs on, and a watched command in another env sees none of
the cockpit's packages. A command whose Python has no transformers is refused in one line before
anything starts. (Script mode from a light install, without [train], is proven by `.ci/run`.)"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cockpit.errors import CockpitError
from cockpit.hook import bundle
from cockpit.launch.plan import start_supervisor
from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.trainers import versions
from helpers import wait_for

GUARDED = {"orjson", "yaml", "ijson"}
"""Imported only where the module copes without them: orjson and ijson (files.check_json_object's
stream) under try/except ImportError, PyYAML inside the functions that read or write YAML, which the
hook never calls."""


def _top_level_imports(path: Path) -> set[str]:
    """Modules a file imports at module level, outside a try block."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_hook_folder_holds_exactly_the_modules_the_hook_imports(tmp_path):
    built = bundle.build(tmp_path / "hook")
    files = {p.relative_to(built).as_posix() for p in built.rglob("*.py")}
    wanted = {"sitecustomize.py"}
    for name, path in bundle.closure().items():
        rel = "/".join(name.split(".")[1:])
        wanted.add(f"{bundle.PRIVATE}/{rel}/__init__.py" if path.name == "__init__.py"
                   else f"{bundle.PRIVATE}/{rel}.py")
    packages = {str(Path(f).parent.as_posix()) for f in wanted if f.startswith(bundle.PRIVATE)}
    wanted |= {f"{p}/__init__.py" for p in packages}
    assert files == wanted
    assert {"cockpit.hook", "cockpit.hook.callback", "cockpit.runner.callback", "cockpit.run.journal"} <= set(
        bundle.closure())
    assert not {"cockpit.metrics.completions", "cockpit.metrics.trainer_state", "cockpit.hook.public",
                "cockpit.hook.bundle"} & set(bundle.closure())
    for f in built.rglob("*.py"):  # every copy names the private package, never a `cockpit` of the user's
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m == "cockpit" or m.startswith("cockpit.") for m in mods), (f, mods)


SHIPPED_MARK = ("# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only "
                "(+ their transformers).")
"""The first line of every module the hook ships into the user's process: whoever edits one is told."""


def test_every_module_the_hook_ships_says_so_on_its_first_line():
    shipped = [*bundle.closure().values(), bundle._SITECUSTOMIZE]
    unmarked = [str(p) for p in shipped if p.read_text(encoding="utf-8").splitlines()[0] != SHIPPED_MARK]
    assert not unmarked, f"start each with the line: {SHIPPED_MARK}\n" + "\n".join(unmarked)


def test_the_hooks_modules_need_only_the_standard_library_and_transformers():
    outside = set().union(*bundle.outside_imports().values())
    assert outside - set(sys.stdlib_module_names) == {"transformers", *GUARDED}
    for name, path in bundle.closure().items():
        assert not _top_level_imports(path) & GUARDED, name  # guarded, or inside functions
    assert "transformers" in _top_level_imports(bundle.closure()["cockpit.runner.callback"])


OLDEST = min((line.python for line in versions.TRL_LINES), key=versions.parse)
"""The oldest Python a supported TRL line runs on: the hook's floor."""


def _oldest_python() -> str:
    """OLDEST's interpreter. Missing, the test skips on a developer's machine and fails in CI
    (`CI=true`), where a skip would hide that nothing checked the hook's floor."""
    python = _python(OLDEST)
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no python{OLDEST} in CI — install it (e.g. uv python install {OLDEST}): "
                        "the hook's floor must be checked there")
        pytest.skip(f"no python{OLDEST} on this machine")
    return python


def _python(version: str) -> str | None:
    found = shutil.which(f"python{version}")
    pyenv = Path.home() / ".pyenv" / "versions"
    if pyenv.is_dir():  # a pyenv shim may refuse a version that is installed but not selected
        found = next((str(p) for p in sorted(pyenv.glob(f"{version}.*/bin/python{version}"))), found)
    return found


@pytest.mark.proc
def test_the_hook_folder_imports_on_the_oldest_python_a_supported_trl_line_runs_on(tmp_path):
    python = _oldest_python()
    built = bundle.build(tmp_path / "hook")
    probe = textwrap.dedent(f"""
        import sys
        import {bundle.PRIVATE}.hook as hook
        from {bundle.PRIVATE}.run import completions_store, folder, journal
        from {bundle.PRIVATE}.metrics.health import HealthMonitor
        from {bundle.PRIVATE}.trainers import versions
        hook.install_import_hook()
        run = folder.RunFolder(sys.argv[1])
        with journal.JournalWriter(run.events) as w:
            w.write(journal.metrics(1, {{"loss": float("nan")}}))
            w.write(completions_store.CompletionsWriter(run.path).append(1, [{{"prompt": "p"}}], source="t"))
        run.request(folder.Request.STOP_SAVE)
        print(sys.version_info[:2], versions.sampled_batch_attrs("0.18.0")[0], sorted(HealthMonitor().observe(1, {{}})))
        print("outside:", sorted(m for m in ("numpy", "yaml", "orjson", "cockpit") if m in sys.modules))
    """)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # -S: no site-packages at all, so only the standard library and the hook folder can be imported.
    proc = subprocess.run([python, "-S", "-c", probe, str(run_dir)], env={"PYTHONPATH": str(built)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"({OLDEST.replace('.', ', ')})" in proc.stdout and "_textual_logs" in proc.stdout
    assert "outside: []" in proc.stdout
    records, skipped = journal.read_all(run_dir / "events.jsonl")
    assert [r.kind for r in records] == [journal.METRICS, journal.COMPLETIONS_REF] and not skipped
    assert (run_dir / "control" / "stop_save").is_file()
    compiled = subprocess.run([python, "-m", "compileall", "-q", str(built)], capture_output=True, text=True,
                              timeout=120)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def test_the_hooks_own_modules_are_loaded_without_writing_their_bytecode(tmp_path, monkeypatch):
    """The bootstrap's finder (in the user's process, first on sys.meta_path): the hook's package and
    its modules are found where Python finds them and compiled without a `.pyc` written beside them
    (under the path the run folder had at the start, which a move makes wrong); every other name is
    left to Python."""
    import importlib.util

    built = bundle.build(tmp_path / "hook")
    source = bundle._SITECUSTOMIZE  # the bootstrap the bundle copies
    spec = importlib.util.spec_from_file_location("cockpit_bootstrap_under_test", source)
    assert spec is not None and spec.loader is not None
    site = importlib.util.module_from_spec(spec)
    monkeypatch.delenv("COCKPIT_RUN_DIR", raising=False)  # not watching: only the classes are made
    monkeypatch.setattr(sys, "path", [str(source.parent)])  # and no user's sitecustomize to chain to
    spec.loader.exec_module(site)
    monkeypatch.undo()

    finder = site._OwnModules(str(built))
    assert finder.own == {bundle.PRIVATE}
    assert finder.find_spec("json") is None and finder.find_spec("sitecustomize") is None
    package = finder.find_spec(bundle.PRIVATE, [str(built)])
    module = finder.find_spec(f"{bundle.PRIVATE}.files", [str(built / bundle.PRIVATE)])
    assert package is not None and module is not None
    assert isinstance(package.loader, site._SourceOnly) and isinstance(module.loader, site._SourceOnly)
    assert sys.dont_write_bytecode is False  # (tests/conftest.py): Python would write them here
    compile_and_run = importlib.util.module_from_spec(package)
    package.loader.exec_module(compile_and_run)
    assert module.loader.get_code(module.name) is not None
    assert not list(built.rglob("*.pyc"))


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory) -> Path:
    """A Python env of its own: no cockpit, no numpy, no transformers."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where / "bin" / "python"


@pytest.mark.proc
def test_a_command_in_another_env_sees_none_of_the_cockpits_packages(tmp_path, runs_dir, bare_venv):
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import importlib.util, sys
        print("cockpit:", importlib.util.find_spec("cockpit"))
        print("numpy:", importlib.util.find_spec("numpy"))
        print("hooked:", "_cockpit_hook.hook" in sys.modules)
        print("path:", [p for p in sys.path if "site-packages" in p and not p.startswith(sys.prefix)])
    """), encoding="utf-8")
    # Through a shell, which names no Python, so the launch check leaves it alone: the bare env has
    # no transformers, and this only asks what its process can import. PYTHONPATH emptied: the
    # user's own is kept, and this test's names the checkout.
    run = prepare_script(["sh", "-c", f"exec {bare_venv} {probe}"], cwd=tmp_path, runs_dir=runs_dir,
                         env={"PYTHONPATH": ""})
    start_supervisor(run)
    wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=120)
    out = run.stdout_log.read_text(encoding="utf-8")
    assert run.read_status().state == "finished", out
    assert "cockpit: None" in out and "numpy: None" in out and "hooked: True" in out and "path: []" in out
    # (and the user's Python's compiled copy of sitecustomize.py, where it keeps them)
    assert sorted(p.name for p in (run.path / "hook").iterdir() if p.name != "__pycache__") == \
        [bundle.PRIVATE, "sitecustomize.py"]
    # The hook's modules leave no bytecode there: written where the run folder was when the process
    # started, it would make a run folder moved meanwhile again, in part, where it was.
    assert not list((run.path / "hook" / bundle.PRIVATE).rglob("*.pyc"))


@pytest.mark.proc
def test_a_command_whose_python_cannot_import_transformers_is_refused_in_one_line(tmp_path, runs_dir, bare_venv):
    with pytest.raises(CockpitError) as err:
        prepare_script([str(bare_venv), "train.py"], cwd=tmp_path, runs_dir=runs_dir)
    line = str(err.value)
    assert "\n" not in line and str(bare_venv) in line and "cannot import transformers" in line
    assert "/path/to/env/bin/python" in line
    assert list(runs_dir.iterdir()) == []  # nothing was created


def test_where_each_trl_line_keeps_its_sampled_batch():
    assert versions.sampled_batch_attrs("0.18.0")[0] == "_textual_logs"
    assert versions.sampled_batch_attrs("0.19.1")[0] == "_textual_logs"
    assert versions.sampled_batch_attrs("0.20.0")[0] == "_logs"
    assert versions.sampled_batch_attrs("1.16.0") == ("_logs", "_textual_logs")  # GOLD keeps the old name
    assert versions.sampled_batch_attrs(None)[0] == "_logs"
    assert versions.parse("5.0.0rc1") == (5, 0, 0) and versions.parse("0.19.1") < versions.parse("0.20")
    for line in versions.TRL_LINES:
        assert versions.sampled_batch_attrs(line.trl)[0] == line.sampled_batch


def test_older_trl_or_transformers_than_presets_support_get_one_line():
    from cockpit.trainers.discovery import preset_range_problem

    assert preset_range_problem({"trl": "1.16.0", "transformers": "5.23.0"}) is None
    line = preset_range_problem({"trl": "0.19.1", "transformers": "4.53.3"})
    assert line is not None and "\n" not in line
    assert "trl 0.19.1" in line and "transformers 4.53.3" in line and "trl>=1.0.0" in line
    assert "cockpit run --" in line


@pytest.fixture(scope="module")
def demo():
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    return ensure_all(demo_dir())


@pytest.mark.slow
def test_a_scripts_own_cockpit_callback_under_cockpit_run_is_the_one_that_writes(tmp_path, runs_dir, demo):
    """The script's env has cockpit and hands its trainer `cockpit.CockpitCallback()`; the hook (its
    own copy, another class) finds it by its mark and adds no second one: one journal writer."""
    script = tmp_path / "incode.py"
    script.write_text(textwrap.dedent(f"""\
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
        from cockpit import CockpitCallback
        m = {str(demo / "models" / "tiny-lm")!r}
        data = load_dataset({str(demo / "data" / "prompt_completion")!r}, split="train")
        args = SFTConfig(output_dir="out", max_steps=2, logging_steps=1, use_cpu=True, bf16=False,
                         report_to="none", save_strategy="no", max_length=64)
        trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(m), args=args, train_dataset=data,
                             processing_class=AutoTokenizer.from_pretrained(m), callbacks=[CockpitCallback()])
        print("callbacks:", sorted(type(c).__module__ + "." + type(c).__name__
                                   for c in trainer.callback_handler.callbacks if "cockpit" in type(c).__module__))
        trainer.train()
        """), encoding="utf-8")
    run = prepare_script([sys.executable, str(script)], cwd=tmp_path, runs_dir=runs_dir)
    start_supervisor(run)
    wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=300)
    out = run.stdout_log.read_text(encoding="utf-8")
    assert run.read_status().state == "finished", out[-2000:]
    assert "callbacks: ['cockpit.hook.public.PublicCockpitCallback']" in out
    records = journal.read_all(run.events)[0]
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2]
    started = [r for r in records if r.kind == journal.RUN_STARTED]
    assert len(started) == 1 and started[0].data["trainer"] == "sft"


SAMPLER_GUARDED = {"psutil", "pynvml"}
"""The sampler reads free memory through psutil and free GPUs through NVML where the env has them."""


def test_the_samplers_folder_holds_its_modules_and_names_no_cockpit(tmp_path):
    """`cockpit sample`, `merge` and the Checkpoints tab start the script run's Python with this
    folder alone of the cockpit's on its path: the sampler, the merger and what they import."""
    from cockpit import bundle as shared
    from cockpit.launch import sampler

    tmp_path.joinpath("cache").mkdir()
    folder = shared.cached(sampler.ROOTS, sampler.PRIVATE, tmp_path / "cache")
    assert shared.cached(sampler.ROOTS, sampler.PRIVATE, tmp_path / "cache") == folder  # built once
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")}
    assert files == {f"{sampler.PRIVATE}/{f}" for f in ("__init__.py", "errors.py", "runner/__init__.py",
                                                         "runner/sample.py", "runner/merge.py",
                                                         "runner/parent.py", "runner/startup.py")}
    for f in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m == "cockpit" or m.startswith("cockpit.") for m in mods), (f, mods)
    outside = set().union(*shared.outside_imports(sampler.ROOTS).values()) - set(sys.stdlib_module_names)
    assert outside == {"torch", "transformers", "peft", "huggingface_hub", *SAMPLER_GUARDED}
    for name, path in shared.closure(sampler.ROOTS).items():
        assert not _top_level_imports(path) & (outside - {"cockpit"}), name  # all inside functions
    env = sampler.sampler_env(folder)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(folder)
    assert sampler.sampler_command("py", "merge", "a")[1:] == ["-m", f"{sampler.PRIVATE}.runner.merge", "a"]


def test_the_samplers_folder_imports_on_the_oldest_python_a_supported_trl_line_runs_on(tmp_path):
    from cockpit import bundle as shared
    from cockpit.launch import sampler

    python = _oldest_python()
    folder = shared.cached(sampler.ROOTS, sampler.PRIVATE, tmp_path)
    probe = textwrap.dedent(f"""
        import sys
        from {sampler.PRIVATE}.runner import merge, sample
        from {sampler.PRIVATE}.errors import describe
        from {sampler.PRIVATE}.runner.parent import end_with_parent
        end_with_parent("probe")  # the parent watch, on this Python too
        print(sys.version_info[:2], sample.GENERATE_INPUTS, describe(ImportError("\\n\\nthe real reason")))
        print("outside:", sorted(m for m in ("numpy", "yaml", "torch", "cockpit") if m in sys.modules))
    """)
    proc = subprocess.run([python, "-S", "-c", probe], env={"PYTHONPATH": str(folder)}, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"({OLDEST.replace('.', ', ')})" in proc.stdout and "ImportError: the real reason" in proc.stdout
    assert "outside: []" in proc.stdout
    usage = subprocess.run([python, "-S", "-m", f"{sampler.PRIVATE}.runner.sample", "x"],
                           env={"PYTHONPATH": str(folder)}, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "usage" in usage.stderr
