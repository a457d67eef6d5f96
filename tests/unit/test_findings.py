"""Findings (issue 23): the judge names what a run's data shows, with the evidence, live in the
supervisor and replayed from files; alerts act on them; `cockpit findings` and `watch` print them.

Inputs are real: public trainer_state.json files (tests/fixtures/trainer_states), a real tiny
GRPO run folder (tests/fixtures/findings/grpo-wasted-groups), a real tiny DPO run's
trainer_state.json (tests/fixtures/findings/dpo-logps-falling), and real tiny runs launched here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cockpit.alerts.engine import AlertEngine
from cockpit.alerts.rules import parse_rules
from cockpit.errors import CockpitError
from cockpit.findings import report
from cockpit.findings.judge import judge, new_findings
from cockpit.findings.model import Finding
from cockpit.metrics.panels import default_panels
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import FIXTURES, REPO, cockpit_cmd

HERE = REPO / "tests" / "fixtures" / "findings"
WASTED = HERE / "grpo-wasted-groups"
DPO_FALLING = HERE / "dpo-logps-falling" / "trainer_state.json"


def _run_copy(tmp_path, src=WASTED) -> RunFolder:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return RunFolder(dst)


def _findings(path) -> list[Finding]:
    return report.for_run(report.load(path))


# -- the judge on real data -------------------------------------------------------------------


def test_public_runs_get_only_the_findings_that_are_true_there():
    """Ten real public trainer_state.json files (labelled in tests/fixtures/real_runs/labels.yaml):
    the GRPO run whose completions were clipped 89% of the time gets `clipping`; the old-naming
    GRPO run's two format rewards never pay; the Whisper run's eval loss rises while its WER still
    improves (info, not overfitting); the DPO run's grad_norm is NaN at 4 steps; the 1,134-step GRPO
    run's KL spikes to ~200 (and once its gradient), its KL starts far from 0, and its completions
    grow 2.5x while the reward stays flat (its loss, β·KL, rising in the warm-up is no warm-up
    finding); nothing else fires (the DPO and ORPO runs' chosen log-probs do not fall, the SFT and
    plain Trainer runs, the 3,765-step SFT run's first log of 14.75 included, are healthy)."""
    import yaml

    labels = yaml.safe_load((FIXTURES.parent / "real_runs" / "labels.yaml").read_text(encoding="utf-8"))
    labelled = sorted(FIXTURES / Path(e["file"]).name for e in labels if e["file"].startswith("../trainer_states/"))
    assert len(labelled) == 10
    got = {p.name: sorted(f.kind for f in _findings(p)) for p in labelled}
    assert got.pop("trl_grpo_modern_multireward.json") == ["clipping"]
    assert got.pop("trl_grpo_legacy_reward_keys.json") == ["reward_never_pays"]
    assert got.pop("seq2seq_whisper_eval_wer_legacy_format.json") == ["eval_metric_improves_while_loss_rises"]
    assert got.pop("trl_dpo_nan_gradnorm_midrun.json") == ["nonfinite_values"]  # 4 skipped steps
    assert got.pop("trl_grpo_1134_steps_noisy.json") == ["grad_spike", "kl_nonzero_at_start", "kl_spike",
                                                          "length_without_reward"]
    assert all(kinds == [] for kinds in got.values()), got


def test_a_grpo_run_whose_groups_got_one_reward_gets_wasted_groups_with_the_prompts(tmp_path):
    run = _run_copy(tmp_path)
    found = {f.kind: f for f in _findings(run.path)}
    wasted = found["wasted_groups"]
    assert wasted.steps == (1, 19) and wasted.severity == "warning" and "--export-prompts" in (wasted.fix or "")
    (prompts,) = [e for e in wasted.evidence if e["type"] == "prompts"]
    assert prompts["count"] == len(prompts["prompts"]) == 16
    assert all(p.startswith("Question: ") for p in prompts["prompts"])
    # Every prompt listed had a group whose rewards were all the same.
    lib = report.load(run.path).library
    step_rows = [r for s in lib.steps() for r in lib.rows(s)]
    for p in prompts["prompts"]:
        groups: dict[int, set] = {}
        for r in step_rows:
            if r["prompt"] == p:
                groups.setdefault(r["step"], set()).add(r["rewards"]["short_reward"])
        assert any(len(g) == 1 for g in groups.values())
    # Clipping is true too: 24 tokens were not enough for the untrained model.
    clipped = found["clipping"]
    rows = [r for e in clipped.evidence if e["type"] == "completions" for r in e["rows"]]
    assert len(rows) == 6 and all(r["completion"] for r in rows)


@pytest.mark.proc
def test_export_prompts_writes_the_list_to_filter_the_dataset_with(tmp_path):
    run = _run_copy(tmp_path)
    out = tmp_path / "wasted.jsonl"
    proc = subprocess.run(cockpit_cmd("findings", str(run.path), "--export-prompts", str(out)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 16 and {"prompt", "steps", "reward"} <= set(lines[0])
    assert "16 prompts whose whole group got one reward" in proc.stderr
    assert "[warning] wasted_groups (steps 1–19)" in proc.stdout


@pytest.mark.proc
def test_export_prompts_without_completions_is_one_line(tmp_path):
    proc = subprocess.run(cockpit_cmd("findings", str(FIXTURES / "trl_sft_token_accuracy.json"),
                                      "--export-prompts", str(tmp_path / "x.jsonl")),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no completions were logged" in proc.stderr


@pytest.mark.proc
def test_a_replayed_dpo_state_where_both_logps_fall_gets_that_finding():
    proc = subprocess.run(cockpit_cmd("findings", str(DPO_FALLING), "--json"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (rec,) = [r for r in out["findings"] if r["kind"] == "chosen_logps_falling"]
    assert out["checked"]["family"] == "preference" and out["checked"]["steps"] > 0
    first, last = rec["steps"]
    assert 1 <= first < last
    keys = {e["key"] for e in rec["evidence"] if e["type"] == "metric"}
    assert keys == {"logps/chosen", "logps/rejected"}
    chosen = next(e["points"] for e in rec["evidence"] if e["key"] == "logps/chosen")
    assert chosen[-1][1] < chosen[0][1]


def test_the_preference_family_shows_the_margin_panel():
    state = json.loads(DPO_FALLING.read_text())
    keys = sorted({k for e in state["log_history"] for k in e})
    titles = {p.title: p.resolve(keys) for p in default_panels("dpo", keys)}
    assert titles["reward margin"] == ["rewards/margins"]


def test_a_live_window_that_grows_is_one_finding_and_a_replay_prefers_the_whole_window():
    early = Finding("clipping", (1, 5), "warning", "a")
    grown = Finding("clipping", (1, 40), "warning", "b")
    other = Finding("clipping", (60, 80), "warning", "c")
    assert new_findings([grown, other], [early]) == [other]
    assert report.merged([early], [grown]) == [grown]
    hang = Finding("hang", (3, 3), "error", "a kind the judge does not make")
    assert report.merged([early, hang], [grown]) == [grown, hang]


# -- the supervisor's watcher ------------------------------------------------------------------


class _Supervised:
    """A watcher fed as the supervisor feeds it (`supervisor/watch.py`): the journal's earlier
    attempts first, then each turn's new records, then the trainer's exit."""

    def __init__(self, run, watcher) -> None:
        from cockpit.supervisor.watch import Beat, JournalFeed

        self.feed = JournalFeed(run.events, history=watcher.history)
        self.watcher = watcher
        self.beat = Beat(pid=None, started_at=time.time(), live=False)

    def ended(self) -> None:
        self.feed.pump(self.beat, [self.watcher])
        self.watcher.ended(journal.run_ended("finished"), self.beat)


def test_the_watcher_appends_each_finding_once_with_its_evidence(tmp_path):
    from cockpit.supervisor.findings import FindingsWatcher

    run = _run_copy(tmp_path)
    with journal.JournalWriter(run.events) as jw:
        w = _Supervised(run, FindingsWatcher(run, jw, "grpo"))
        w.ended()
        w.ended()
    records, _ = journal.read_all(run.events)
    found = [Finding.from_record(r) for r in records if r.kind == journal.FINDING]
    assert sorted(f.kind for f in found) == ["clipping", "wasted_groups"]
    assert all(f.evidence for f in found)
    # A resumed supervisor reads what was found before and does not say it again.
    with journal.JournalWriter(run.events) as jw:
        _Supervised(run, FindingsWatcher(run, jw, "grpo")).ended()
    again, _ = journal.read_all(run.events)
    assert sum(r.kind == journal.FINDING for r in again) == 2


def test_the_watcher_knows_max_steps_so_a_live_warm_up_is_not_longer_than_the_run(tmp_path):
    """Live, five steps into a 120-step run whose learning rate still warms up: the watcher reads
    max_steps from run_started and progress, as a replay does, and says nothing yet."""
    from cockpit.supervisor.findings import FindingsWatcher

    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("sft", max_steps=120))
        for step in range(1, 6):
            jw.write(journal.metrics(step, {"loss": 3.0 - 0.1 * step, "learning_rate": 1e-4 * step / 10,
                                            "grad_norm": 1.0}))
            jw.write(journal.progress(step, max_steps=120))
        w = FindingsWatcher(run, jw, "sft")
        _Supervised(run, w).ended()
    assert w.store.max_steps == 120
    records, _ = journal.read_all(run.events)
    assert [r.data["kind"] for r in records if r.kind == journal.FINDING] == []


def test_a_failing_judge_is_one_warning_and_never_the_supervisors_end(tmp_path, monkeypatch):
    from cockpit.supervisor import findings as watcher_module

    run = _run_copy(tmp_path)

    def broken(*_a, **_k):
        raise MemoryError("no room")

    monkeypatch.setattr(watcher_module, "detect", broken)
    with journal.JournalWriter(run.events) as jw:
        w = _Supervised(run, watcher_module.start(run, jw, "grpo"))
        w.ended()
        w.ended()  # off now: nothing more
    records, _ = journal.read_all(run.events)
    warnings = [r for r in records if r.kind == journal.WARNING and r.data.get("code") == "findings"]
    assert len(warnings) == 1 and "findings are off for this run: MemoryError: no room" in warnings[0].data["message"]
    assert not any(r.kind == journal.FINDING for r in records)


# -- alerts and watch -------------------------------------------------------------------------


def test_an_alert_rule_acts_on_a_finding_of_its_kind():
    rules = parse_rules([{"finding": "reward_hacking", "do": ["journal"]},
                         {"finding": "*", "do": ["notify"], "every_minutes": 0}])
    assert [r.name for r in rules] == ["finding reward_hacking", "finding *"]
    engine = AlertEngine(rules)
    rec = Finding("reward_hacking", (12, 30), "warning", "reward rose while length collapsed").to_record()
    fired = engine.feed([journal.metrics(30, {"reward": 1.0}), rec])
    assert [(f.rule.name, f.key, f.step) for f in fired] == [("finding reward_hacking", "reward_hacking", 30),
                                                              ("finding *", "reward_hacking", 30)]
    assert fired[0].message == "finding reward_hacking: reward rose while length collapsed"
    assert engine.feed([Finding("clipping", (1, 5), "warning", "x").to_record()])[0].rule.name == "finding *"


def test_a_bad_finding_rule_is_named_with_its_fix():
    with pytest.raises(CockpitError) as err:
        parse_rules([{"finding": 3}, {"finding": ""}])
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and all("name a finding kind, e.g. finding: reward_hacking" in line for line in lines)


@pytest.mark.proc
def test_watch_prints_findings_as_they_come(tmp_path):
    run = _run_copy(tmp_path)
    with journal.JournalWriter(run.events) as jw:
        jw.write(Finding("clipping", (1, 19), "warning", "completions cut", "raise max_completion_length").to_record())
    proc = subprocess.run(cockpit_cmd("watch", str(run.path), "--no-follow"), capture_output=True, text=True,
                          timeout=120)
    assert "finding: [warning] clipping (steps 1–19): completions cut — fix: raise max_completion_length" \
        in proc.stdout


@pytest.mark.proc
def test_findings_json_lists_the_recorded_and_the_judged(tmp_path):
    run = _run_copy(tmp_path)
    with journal.JournalWriter(run.events) as jw:
        jw.write(Finding("hang", None, "error", "no step for 10 minutes").to_record())
    proc = subprocess.run(cockpit_cmd("findings", str(run.path), "--json"), capture_output=True, text=True,
                          timeout=120)
    out = json.loads(proc.stdout)
    got = out["findings"]
    assert [r["kind"] for r in got] == ["hang", "clipping", "wasted_groups"]
    assert got[0]["steps"] is None and got[1]["steps"] == [1, 19]
    # what was checked comes with them: every rule of the family, the quiet ones with their number
    checked = out["checked"]
    assert checked["family"] == "grpo" and checked["steps"] == 19
    assert checked["summary"].startswith("checked ") and "for grpo over 19 steps" in checked["summary"]
    rules = {c["kind"]: c for c in checked["checks"]}
    assert rules["clipping"]["fired"] == 1 and rules["wasted_groups"]["fired"] == 1
    assert rules["reward_never_pays"]["ran"] and rules["reward_never_pays"]["note"]
    assert not rules["overfitting"]["ran"] and "eval loss" in rules["overfitting"]["note"]


def test_judge_reads_no_completions_without_a_library():
    found = judge(report.load(WASTED).store, None, "grpo")
    assert {f.kind for f in found} == {"clipping", "wasted_groups"}
    assert all(e["type"] == "metric" for f in found for e in f.evidence)


# -- real runs --------------------------------------------------------------------------------


def _grpo_preset(reward: str, **overrides):
    from cockpit.config.presets import apply_overrides, load_preset

    sets = [f"{k}={v}" for k, v in overrides.items()]
    preset = apply_overrides(load_preset("demo-grpo"), sets)
    preset.trl["reward_funcs"] = [reward]
    return preset


@pytest.mark.slow
def test_a_grpo_run_paid_for_short_answers_gets_reward_hacking_naming_the_window(runs_dir):
    """The supervisor judges the run as it trains: the reward rises while the policy collapses
    onto the shortest tokens (entropy 6.6 → under 2), and the finding names the window and
    carries the top-rewarded completions; an alert rule on the finding fires."""
    from cockpit.launch.plan import launch
    from helpers import wait_for

    preset = _grpo_preset(f"{HERE / 'short_reward.py'}:short_reward", max_steps=18,
                          per_device_train_batch_size=8, max_completion_length=24, learning_rate=3e-2,
                          lr_scheduler_type="constant", save_steps=100)
    preset.cockpit["alerts"] = [{"finding": "reward_hacking", "do": ["journal"]}]
    run = launch(preset, runs_dir)
    wait_for(lambda: not run.read_status().live, timeout=1500)
    assert run.read_status().state == "finished"
    records, _ = journal.read_all(run.events)
    (hack,) = [Finding.from_record(r) for r in records
               if r.kind == journal.FINDING and r.data["kind"] == "reward_hacking"]
    first, last = hack.steps
    assert 2 <= first < last <= 18 and f"steps {first}–{last}" in hack.summary and "entropy fell" in hack.summary
    rows = [(e["step"], r) for e in hack.evidence if e["type"] == "completions" for r in e["rows"]]
    assert len(rows) == 6 and all(first <= step <= last for step, _ in rows)
    best = max(r["rewards"]["short_reward"] for _, r in rows)
    everything = [r for s in range(first, last + 1) for r in report.load(run.path).library.rows(s)]
    assert best == max(r["rewards"]["short_reward"] for r in everything)
    alerts = [r for r in records if r.kind == journal.ALERT and r.data["rule"] == "finding reward_hacking"]
    assert len(alerts) == 1
    # Written before the run's last line, so `cockpit watch` prints it.
    assert records.index(next(r for r in records if r.kind == journal.FINDING)) < len(records) - 1
    proc = subprocess.run(cockpit_cmd("watch", str(run.path), "--no-follow"), capture_output=True, text=True,
                          timeout=120)
    assert f"finding: [warning] reward_hacking (steps {first}–{last})" in proc.stdout


@pytest.mark.slow
def test_the_honest_demo_grpo_run_gets_no_reward_hacking(farm_run):
    """The shipped demo preset (arithmetic + length rewards, lr 1e-4), 18 steps: no reward hacking. Its
    completions are cut at 16 tokens nearly always, and that `clipping` finding is true. (The run is
    the farm's `grpo`, judged by its supervisor as it trained: tests/helpers.)"""
    run = farm_run("grpo")
    assert run.read_status().state == "finished"
    assert "max_steps: 18" in run.run_yaml.read_text()
    records, _ = journal.read_all(run.events)
    kinds = sorted(r.data["kind"] for r in records if r.kind == journal.FINDING)
    # clipping is true there (its completions hit 16 tokens); weight_change is the doctor's info line
    # at each checkpoint, true of every run that trains.
    assert "reward_hacking" not in kinds and set(kinds) <= {"clipping", "weight_change"}
    assert {f.kind for f in _findings(run.path)} == set(kinds)


def test_ppo_findings_from_the_article_recipes():
    """PPO left TRL after 1.12, so no run here: the records carry the keys TRL's PPOTrainer logs
    (objective/rlhf_reward, val/ratio, loss/value_avg, …), with values shaped as the PPO
    article's failures: the value ratio drifts to 2, the RLHF reward falls, the value loss
    blows up. A healthy stretch first."""
    from cockpit.metrics.store import MetricStore

    records = []
    for step in range(1, 41):
        bad = step > 20
        records.append(journal.metrics(step, {
            "objective/rlhf_reward": (1.0 + 0.01 * (step % 3)) - (0.1 * (step - 20) if bad else 0.0),
            "objective/scores": 1.0, "objective/kl": 0.1, "objective/entropy": 2.0,
            "val/ratio": 1.0 + 0.02 * (step % 2) + (1.0 if bad else 0.0),
            "loss/policy_avg": -0.01, "loss/value_avg": 0.3 + 0.01 * (step % 4) + (50.0 if step > 30 else 0.0),
        }))
    found = {f.kind: f for f in judge(MetricStore.from_records(records), None, "ppo")}
    assert sorted(found) == ["ppo_ratio", "rlhf_reward_falling", "value_loss_blowup"]
    assert found["ppo_ratio"].steps == (21, 40)
    assert found["value_loss_blowup"].steps == (31, 40) and found["value_loss_blowup"].severity == "error"
    first, last = found["rlhf_reward_falling"].steps
    assert 20 <= first <= 25 and last == 40
    healthy = judge(MetricStore.from_records(records[:20]), None, "ppo")
    assert healthy == []


def _judged_at_every_step(folder) -> dict[str, tuple[int | None, tuple[int, int] | None]]:
    """What a live judge would say, poll by poll: the judge on every prefix of the run's metrics,
    each kind with the first step it was said at and its window then."""
    from cockpit.findings.judge import detect
    from cockpit.metrics.store import MetricStore

    records, _ = journal.read_all(folder / "events.jsonl")
    metrics = [r for r in records if r.kind == journal.METRICS]
    first: dict[str, tuple[int | None, tuple[int, int] | None]] = {}
    for n in range(1, len(metrics) + 1):
        for f in detect(MetricStore.from_records(metrics[:n]), "grpo"):
            first.setdefault(f.kind, (metrics[n - 1].step, f.steps))
    return first


def test_poll_by_poll_the_short_reward_run_is_named_once_its_policy_collapses():
    said = _judged_at_every_step(HERE / "grpo-short-reward")
    step, window = said["reward_hacking"]
    assert 12 <= step <= 18 and window[1] == step and 3 <= window[0] < step
    assert "clipping" in said  # 24 tokens were never enough: true


def test_poll_by_poll_the_honest_demo_run_never_reads_as_reward_hacking():
    """The shipped demo preset: its reward wanders (0.69 … 0.96) while nothing is learned; a
    noisy reward that does not move is no rise."""
    said = _judged_at_every_step(HERE / "grpo-demo-honest")
    assert set(said) == {"clipping"}
