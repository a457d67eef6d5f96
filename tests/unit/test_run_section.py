"""run.yaml's `cockpit:` section, typed (`cockpit/run/section.py`): read once, refused by key with
every problem at once, its defaults filled in, and the same model the presets are checked against."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.errors import CockpitError
from cockpit.run.folder import RunFolder
from cockpit.run.section import DEFAULT_GRACE_S, PRESET_KEYS, cockpit_section, parse_section, section_problems


def _run(tmp_path: Path, text: str) -> RunFolder:
    run = RunFolder(tmp_path / "r")
    run.path.mkdir()
    run.run_yaml.write_text(text, encoding="utf-8")
    return run


def test_a_section_is_read_typed_with_its_defaults(tmp_path):
    run = _run(tmp_path, "trainer: script\ncockpit:\n  stop_grace_s: 3\n  env: {N: 2, TOKEN: secret:x/TOKEN}\n"
               "  script: {command: [python, t.py, --lr, '1e-5', 3], cwd: /w}\n")
    section = cockpit_section(run, strict=True)
    assert section.stop_grace_s == 3.0 and isinstance(section.stop_grace_s, float)
    assert section.env == {"N": "2", "TOKEN": "secret:x/TOKEN"}
    assert section.script is not None and section.script.command == ("python", "t.py", "--lr", "1e-5", "3")
    assert section.script.cwd == "/w" and section.launcher is None and section.doctor == {}
    (tmp_path / "b").mkdir()
    bare = cockpit_section(_run(tmp_path / "b", "trainer: sft\n"))
    assert bare.stop_grace_s == DEFAULT_GRACE_S and bare.script is None and bare.builtin_alerts is None


def test_unknown_keys_and_wrong_values_are_named_all_at_once(tmp_path):
    run = _run(tmp_path, "trainer: sft\ncockpit:\n  stop_grace: 3\n  stop_grace_s: soon\n  env: [A]\n  bogus: 1\n")
    with pytest.raises(CockpitError) as err:
        cockpit_section(run, strict=True)
    lines = str(err.value).splitlines()
    assert len(lines) == 4 and all(ln.startswith(str(run.run_yaml)) for ln in lines), lines
    assert any("unknown key 'cockpit.stop_grace' — did you mean 'cockpit.stop_grace_s'?" in ln for ln in lines)
    assert any("unknown key 'cockpit.bogus'" in ln for ln in lines)
    assert any("cockpit.stop_grace_s: must be a number of seconds" in ln for ln in lines)
    assert any(ln.endswith("cockpit.env: Input should be a valid dictionary") for ln in lines)
    assert cockpit_section(run).stop_grace_s == DEFAULT_GRACE_S  # not strict: the defaults, so a reader goes on


def test_a_preset_may_not_write_the_script_key_the_cockpit_keeps_for_itself():
    assert "script" not in PRESET_KEYS and "launcher" in PRESET_KEYS and PRESET_KEYS["stop_grace_s"]
    [(key, line)] = section_problems({"script": {"command": ["python"]}}, keys=PRESET_KEYS)
    assert key == "cockpit.script" and line.startswith("unknown key 'cockpit.script'"), line
    assert parse_section({"script": {"command": ["python"]}}).script is not None
    with pytest.raises(CockpitError, match=r"cockpit.script.command: .*at least 1"):
        parse_section({"script": {"command": []}})


def test_what_a_resume_with_set_asked_of_a_scripts_trainer_is_read_typed(tmp_path):
    from cockpit.hook import bundle

    run = _run(tmp_path, "trainer: script\ncockpit:\n  script:\n    command: [python, t.py]\n    cwd: /w\n"
               "    train_args: {segment: 1, set: {max_steps: 40, learning_rate: 0.001}}\n")
    script = cockpit_section(run, strict=True).script
    assert script is not None and script.train_args is not None and script.train_args.segment == 1
    assert bundle.train_args(run.path) == {"segment": 1, "set": {"max_steps": 40, "learning_rate": 0.001}}
    run.run_yaml.write_text("trainer: script\ncockpit:\n  script: {command: [python], train_args: {segment: -1}}\n")
    with pytest.raises(CockpitError, match=r"cockpit.script.train_args.segment: .*greater than or equal to 0"):
        cockpit_section(run, strict=True)
