"""Every input is bounded, and nothing bad is accepted in silence: real hostile files (an anchor
bomb, a damaged completions store, an unreadable parquet file, a broken user alerts file) and
real CLI invocations, each with its exit code and its one line."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import yaml

from cockpit.alerts.engine import AlertEngine
from cockpit.alerts.rules import MAX_STEPS_WINDOW, Rule, parse_rules
from cockpit.errors import CockpitError
from cockpit.files import safe_load
from cockpit.metrics.completions import CompletionsLibrary
from cockpit.run import journal
from cockpit.run.completions_store import INDEX, STORE, CompletionsWriter
from helpers import FIXTURES, NO_SFT_CHECK, cockpit_cmd

DEMO_SFT = "trainer: sft\nmodel_name_or_path: demo:models/tiny-lm\ndataset_name: demo:data/prompt_completion\n"


def _cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300):
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=env)


def _one_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


# -- YAML ---------------------------------------------------------------------------------------


@pytest.mark.proc
def test_a_yaml_anchor_bomb_is_refused_by_dry_run_with_one_line(tmp_path):
    preset = tmp_path / "bomb.yaml"
    preset.write_text(DEMO_SFT + "cockpit:\n  dataset:\n" + "".join(f"    {line}\n" for line in _bomb().splitlines()),
                      encoding="utf-8")
    proc = _cli("run", str(preset), "--dry-run", cwd=tmp_path, timeout=60)  # 9^9 values: would never end
    assert proc.returncode == 2
    line = _one_line(proc)
    assert str(preset) in line and "aliases expand to more than 100,000 values" in line


def test_a_value_that_contains_itself_is_refused_and_ordinary_aliases_still_load():
    with pytest.raises(yaml.YAMLError, match="cannot contain itself"):
        safe_load("a: &a [1, *a]\n")
    assert safe_load("base: &b {lr: 1e-4, steps: 10}\nrun: *b\n") == {"base": {"lr": 1e-4, "steps": 10},
                                                                    "run": {"lr": 1e-4, "steps": 10}}


# -- alert rules --------------------------------------------------------------------------------


@pytest.mark.proc
def test_alert_rule_numbers_out_of_range_are_all_refused_before_launch(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text(DEMO_SFT + "cockpit:\n  alerts:\n"
                      "    - {metric: loss, flat: 1e300}\n"
                      "    - {metric: loss, rises_pct: 50, window: 1e26}\n"
                      "    - {metric: loss, above: .nan}\n"
                      "    - {metric: loss, below: .inf}\n"
                      "    - {metric: loss, flat: 5, tolerance: abc}\n"
                      "    - {event: run_ended, states: [bogus]}\n", encoding="utf-8")
    proc = _cli("run", str(preset), "--dry-run", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    said = proc.stderr
    assert f"cockpit.alerts[0].flat: must be a whole number from 1 to {MAX_STEPS_WINDOW:,}" in said
    assert f"cockpit.alerts[1].window: must be a whole number from 1 to {MAX_STEPS_WINDOW:,}" in said
    assert "cockpit.alerts[2].above: nan is not a finite number" in said
    assert "cockpit.alerts[3].below: inf is not a finite number" in said
    assert "cockpit.alerts[4].tolerance: 'abc' is not a number" in said
    assert "cockpit.alerts[5].states: 'bogus' is not a state a run ends in" in said


def test_a_rule_that_cannot_be_computed_never_switches_off_the_others():
    """A rule made in code (not parsed) with a window no deque can hold: the engine skips it and
    every other rule keeps firing."""
    broken = Rule("huge", "flat", 1.0, metric="loss", count=10**30)
    above = Rule("loss high", "above", 5.0, metric="loss", every_s=0)
    engine = AlertEngine([broken, above])
    fired = engine.feed([journal.metrics(s, {"loss": 9.0}) for s in (1, 2)])
    assert [f.rule.name for f in fired] == ["loss high"]


def test_parsed_rules_keep_whole_numbers_and_finite_tolerances():
    rules = parse_rules([{"metric": "loss", "flat": 5.0, "tolerance": 0.01},
                         {"metric": "loss", "rises_pct": 50, "window": 20}])
    assert (rules[0].count, rules[0].tolerance, rules[1].count) == (5, 0.01, 20)
    with pytest.raises(CockpitError, match="every_minutes"):
        parse_rules([{"metric": "loss", "above": 1, "every_minutes": float("nan")}])
    assert math.isfinite(rules[0].value)


# -- integer fields ----------------------------------------------------------------------------


@pytest.mark.parametrize("value, said", [("1e30", "max_steps must be an integer of at most"),
                                         ("2.5", "max_steps must be an integer (got 2.5)")])
@pytest.mark.proc
def test_an_integer_field_refuses_a_float_that_is_not_a_usable_integer(tmp_path, value, said):
    proc = _cli("run", "demo-sft", "--dry-run", "--set", f"max_steps={value}", cwd=tmp_path)
    assert proc.returncode == 2
    assert said in _one_line(proc)


@pytest.mark.proc
def test_a_whole_float_for_an_integer_field_reaches_the_trainer_as_an_integer(tmp_path):
    proc = _cli("run", "demo-sft", "--dry-run", "--set", "max_steps=1e3", "--set", NO_SFT_CHECK, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\nmax_steps: 1000\n" in proc.stdout


# -- silent cases -------------------------------------------------------------------------------


@pytest.mark.proc
def test_a_broken_user_alerts_file_is_named_at_launch_and_in_the_runs_journal(tmp_path, runs_dir):
    config = tmp_path / "config"
    config.mkdir()
    (config / "alerts.yaml").write_text("alerts: [ {metric: loss, above: 5\n", encoding="utf-8")
    env = {**os.environ, "COCKPIT_CONFIG_DIR": str(config)}
    proc = _cli("run", "demo-sft", "--dry-run", "--set", NO_SFT_CHECK, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"# warning: {config / 'alerts.yaml'}: not valid YAML (line 2)" in proc.stdout

    from cockpit.alerts.alerter import Alerter
    from cockpit.run.folder import create_run_folder

    run = create_run_folder(runs_dir, "x")
    run.run_yaml.write_text("trainer: sft\n", encoding="utf-8")
    old = os.environ.get("COCKPIT_CONFIG_DIR")
    os.environ["COCKPIT_CONFIG_DIR"] = str(config)
    try:
        with journal.JournalWriter(run.events) as jw:
            Alerter(run, jw, trainer="sft")
    finally:
        os.environ["COCKPIT_CONFIG_DIR"] = old or ""
        if old is None:
            del os.environ["COCKPIT_CONFIG_DIR"]
    warnings = [r.data["message"] for r in journal.read_all(run.events)[0] if r.kind == journal.WARNING]
    assert any("alerts.yaml: not valid YAML" in w and "are off" in w for w in warnings), warnings


@pytest.mark.proc
def test_the_slurm_kind_is_refused_at_validation_where_slurm_is_missing(tmp_path):
    # A PATH without Slurm's commands, whether or not this machine has them elsewhere.
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not any(Path(d, c).exists() for c in ("sbatch", "squeue", "scancel")))
    proc = _cli("run", "demo-sft", "--dry-run", "--set", "cockpit.launcher.kind=slurm", cwd=tmp_path,
                env={**os.environ, "PATH": path})
    assert proc.returncode == 2
    line = _one_line(proc)
    assert "cockpit.launcher.kind is slurm, but sbatch, squeue, scancel not found" in line
    assert "drop kind: slurm" in line


@pytest.mark.parametrize("steps, said", [("10:5", "the range is empty (10 comes after 5)"),
                                         ("-3:", "steps are numbered from 0")])
@pytest.mark.proc
def test_an_export_step_range_that_selects_nothing_or_reads_backwards_is_refused(tmp_path, steps, said):
    run = _store_run(tmp_path)
    out = tmp_path / "c.jsonl"
    proc = _cli("export", str(run), "--completions", str(out), f"--steps={steps}")
    assert proc.returncode == 2 and said in _one_line(proc)
    assert not out.exists()


@pytest.mark.proc
def test_export_names_an_unreadable_parquet_file_instead_of_dropping_its_rows(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out_dir = tmp_path / "output"
    (out_dir / "completions").mkdir(parents=True)
    shutil.copy(FIXTURES / "trl_grpo_modern_multireward.json", out_dir / "trainer_state.json")
    pq.write_table(pa.Table.from_pylist([{"step": 1, "prompt": "p", "completion": "c", "acc": 1.0}]),
                   out_dir / "completions" / "completions_00001.parquet")
    (out_dir / "completions" / "completions_00002.parquet").write_bytes(b"PAR1 not really parquet")
    dest = tmp_path / "c.jsonl"
    proc = _cli("export", str(out_dir), "--completions", str(dest))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["step"] for x in dest.read_text().splitlines()] == [1]
    line = _one_line(proc)
    assert "completions_00002.parquet: unreadable" in line and "step 2's completions are left out" in line


# -- the completions store ---------------------------------------------------------------------


def _rows(step: int) -> list[dict]:
    return [{"prompt": f"p{step}", "completion": f"c{step}-{i}", "rewards": {"acc": 1.0}} for i in range(2)]


def _store_run(tmp_path: Path, steps: int = 6) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    w = CompletionsWriter(run)
    with journal.JournalWriter(run / "events.jsonl") as jw:
        for s in range(1, steps + 1):
            jw.write(journal.metrics(s, {"loss": 1.0}))
            jw.write(w.append(s, _rows(s), source="trainer_logs"))
    w.close()
    return run


def _offsets(run: Path) -> dict[int, tuple[int, int]]:
    blob = (run / INDEX).read_bytes()
    return {s: (o, n) for s, o, n in struct.iter_unpack("<qqq", blob)}


@pytest.mark.proc
def test_bytes_inserted_into_one_record_cost_that_step_only(tmp_path):
    run = _store_run(tmp_path)
    offset, length = _offsets(run)[3]
    data = (run / STORE).read_bytes()
    middle = offset + length // 2
    (run / STORE).write_bytes(data[:middle] + b"\x00garbage!!!\x00" + data[middle:])  # 12 bytes
    lib = CompletionsLibrary(run)
    lib.refresh()
    got = {s: [r["completion"] for r in lib.rows(s)] for s in lib.steps()}
    assert got[3] == []
    assert {s: v for s, v in got.items() if s != 3} == {s: [f"c{s}-0", f"c{s}-1"] for s in (1, 2, 4, 5, 6)}
    # `cockpit export` keeps every other step and names the damaged one.
    dest = tmp_path / "c.jsonl"
    proc = _cli("export", str(run), "--completions", str(dest))
    assert proc.returncode == 0, proc.stderr
    assert sorted({json.loads(x)["step"] for x in dest.read_text().splitlines()}) == [1, 2, 4, 5, 6]
    assert "step 3's record is damaged" in _one_line(proc)


def test_a_line_inserted_between_records_loses_no_step(tmp_path):
    run = _store_run(tmp_path)
    offset, _ = _offsets(run)[2]
    data = (run / STORE).read_bytes()
    (run / STORE).write_bytes(data[:offset] + b"not a record\n" + data[offset:])
    lib = CompletionsLibrary(run)
    lib.refresh()
    assert [len(lib.rows(s)) for s in range(1, 7)] == [2] * 6


def test_an_index_entry_longer_than_the_file_is_dropped_not_allocated(tmp_path):
    run = _store_run(tmp_path)
    with open(run / INDEX, "ab") as fh:
        fh.write(struct.pack("<qqq", 7, 0, 2**40))  # 1 TiB from a file of a few hundred bytes
        fh.write(struct.pack("<qqq", 8, -5, 10))
    lib = CompletionsLibrary(run)
    lib.refresh()
    assert lib.steps() == [1, 2, 3, 4, 5, 6] and lib.store.dropped == 2
    assert [r["completion"] for r in lib.rows(6)] == ["c6-0", "c6-1"]
