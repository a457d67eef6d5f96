"""Alerts, for real and with nobody attached: rules in a preset fire from the supervisor, a local
webhook receiver gets the POST, a stop_save rule early-stops a real run, a stall rule fires on a
paused trainer. The UI is never started here."""

from __future__ import annotations

import json
import math
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from cockpit.alerts.engine import AlertEngine
from cockpit.alerts.rules import Rule, builtin_rules, parse_rules
from cockpit.config.presets import apply_overrides, load_preset
from cockpit.errors import CockpitError
from cockpit.launch.plan import launch
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.run.summaries import supervisor_alive
from helpers import NO_SFT_CHECK, REPO, cockpit_cmd, fake_argv, wait_for

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _m(step: int, **values: float) -> journal.Record:
    return journal.metrics(step, values)


def test_each_condition_fires_once_when_it_starts_holding_then_again_after_clearing():
    clock = _Clock()
    rules = parse_rules([
        {"metric": "loss", "above": 5.0, "for": 3, "every_minutes": 0},
        {"metric": "grad_norm", "is": "nan"},
        {"metric": "rewards/*/mean", "falls_pct": 50, "window": 2},
        {"metric": "eval_loss", "not_improved_evals": 2, "mode": "min"},
        {"metric": "lr", "flat": 3},
    ])
    eng = AlertEngine(rules, clock=clock)
    fired = eng.feed([_m(1, loss=6), _m(2, loss=7), _m(3, loss=8), _m(4, loss=9)])
    assert [(f.rule.metric, f.step) for f in fired] == [("loss", 3)]
    assert eng.feed([_m(5, loss=1)]) == []
    assert [f.step for f in eng.feed([_m(6, loss=6), _m(7, loss=6), _m(8, loss=6)])] == [8]
    nan = eng.feed([_m(9, grad_norm=math.nan)])
    assert len(nan) == 1 and math.isnan(nan[0].value)
    fell = eng.feed([_m(10, **{"rewards/acc/mean": 1.0}), _m(11, **{"rewards/acc/mean": 0.8}),
                     _m(12, **{"rewards/acc/mean": 0.4})])
    assert [f.key for f in fell] == ["rewards/acc/mean"]
    evals = [journal.eval_metrics(s, {"eval_loss": v}) for s, v in ((20, 1.0), (40, 0.9), (60, 0.95), (80, 0.91))]
    assert [f.step for f in eng.feed(evals)] == [80]
    assert [f.step for f in eng.feed([_m(s, lr=0.1) for s in range(90, 94)])] == [93]


def test_stall_and_run_end_and_rate_limit():
    clock = _Clock()
    eng = AlertEngine(parse_rules([{"stalled_minutes": 5}, {"event": "run_ended", "states": ["failed"]},
                                   {"metric": "loss", "is": "nan", "every_minutes": 10}]), clock=clock)
    eng.feed([_m(1, loss=1.0)])
    clock.now += 4 * 60
    assert eng.tick(started_at=0, live=True) == []
    clock.now += 2 * 60
    (stall,) = eng.tick(started_at=0, live=True)
    assert "no new step for 6 min" in stall.message and stall.step == 1
    assert eng.feed([journal.run_ended("finished")]) == []
    assert len(eng.feed([journal.run_ended("failed", reason="CUDA out of memory")])) == 1
    assert len(eng.feed([_m(2, loss=math.nan)])) == 1
    eng.feed([_m(3, loss=1.0)])
    assert eng.feed([_m(4, loss=math.nan)]) == []  # within 10 minutes of the last firing
    clock.now += 11 * 60
    eng.feed([_m(5, loss=1.0)])
    assert len(eng.feed([_m(6, loss=math.nan)])) == 1


def test_bad_rules_are_all_named_at_once():
    with pytest.raises(CockpitError) as err:
        parse_rules([{"metric": "loss", "abov": 5}, {"metric": "loss", "above": "high"},
                     {"stalled_minutes": 5, "do": ["page_me"]}, {"above": 3}])
    lines = str(err.value).splitlines()
    assert len(lines) == 4
    assert "did you mean 'above'" in lines[0] and "not a number" in lines[1]
    assert "unknown action 'page_me'" in lines[2] and "needs a metric" in lines[3]


def test_builtin_rule_sets_cover_every_trainer_and_the_families():
    every = {r.condition for r in builtin_rules(None)}
    assert {"is", "rises_pct", "stalled_minutes", "disk_free_gb_below"} <= every
    grpo = {r.metric for r in builtin_rules("grpo")}
    assert {"frac_reward_zero_std", "entropy", "completions/clipped_ratio", "kl", "completions/mean_length"} <= grpo
    assert "val/ratio" in {r.metric for r in builtin_rules("ppo")}


class _Receiver(BaseHTTPRequestHandler):
    got: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).got.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def alerted(tmp_path_factory):
    """One real demo-sft run (400 steps at most) with nobody attached, whose preset holds both rules
    of the two tests below: `loss > 0.0` and `run_ended` notify a local webhook receiver (its URL
    from the environment, an ntfy topic with a token in its path), and `loss < 1000 for 3 steps`
    early-stops it with a save. One training for both; each test reads what its own rule did."""
    _Receiver.got = []
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("COCKPIT_TEST_HOOK", url + "/hook")
            preset = apply_overrides(load_preset("demo-sft"), ["max_steps=400", "logging_steps=1",
                                                                 "save_steps=1000", NO_SFT_CHECK])
            preset.cockpit["notify"] = {"webhook": "env:COCKPIT_TEST_HOOK", "ntfy": url + "/topic-with-token"}
            preset.cockpit["alerts"] = [{"metric": "loss", "above": 0.0, "do": ["notify"]},
                                        {"event": "run_ended", "do": ["notify"]},
                                        {"metric": "loss", "below": 1000.0, "for": 3, "do": ["stop_save"]}]
            run = launch(preset, tmp_path_factory.mktemp("alerted") / "runs")
            # The final status is written when training ends; the supervisor sends the run_ended
            # notices after it (`supervisor/main.py` _finish), and exits once they are out.
            wait_for(lambda: not run.read_status().live and not supervisor_alive(run.read_status()), timeout=300)
        yield run, list(_Receiver.got)
    finally:
        server.shutdown()
        server.server_close()


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


NOTIFIED = {"loss > 0.0", "run_ended"}


@pytest.mark.slow
def test_a_preset_rule_notifies_a_local_webhook_with_nobody_attached(alerted):
    run, got = alerted
    hooks = [json.loads(body) for path, _, body in got if path == "/hook"]
    assert {h["rule"] for h in hooks} == NOTIFIED
    first = next(h for h in hooks if h["rule"] == "loss > 0.0")
    assert first["run"] == run.name and first["key"] == "loss" and first["value"] > 0 and first["step"] == 1
    assert any(path == "/topic-with-token" and body.startswith(b"[cockpit] ") for path, _, body in got)
    alerts = [r for r in _records(run) if r.kind == journal.ALERT and r.data["rule"] in NOTIFIED]
    assert {a.data["rule"] for a in alerts} == NOTIFIED
    assert all(res["ok"] for a in alerts for res in a.data["actions"])
    # The secret URL is in neither run.yaml nor the journal.
    assert "topic-with-token" not in run.run_yaml.read_text() and "topic-with-token" not in run.events.read_text()
    # run_ended is written when training ends; the run_ended notice's alert line may follow it, once sent
    kinds = [r.kind for r in _records(run)]
    assert set(kinds[kinds.index(journal.RUN_ENDED) + 1:]) <= {journal.ALERT}


@pytest.mark.slow
def test_a_stop_save_rule_early_stops_a_real_run_with_a_checkpoint(alerted):
    run, _ = alerted
    status = run.read_status()
    assert status.state == "stopped", status
    steps = [r.step for r in _records(run) if r.kind == journal.METRICS and not r.data.get("summary")]
    assert 3 <= max(steps) < 400
    assert list((run.output).glob("checkpoint-*"))
    (alert,) = [r for r in _records(run) if r.kind == journal.ALERT and r.data["rule"] not in NOTIFIED]
    assert alert.step == 3 and alert.data["actions"][0]["action"] == "stop_save"


@pytest.mark.proc
def test_a_stall_rule_fires_on_a_paused_trainer_and_a_refusing_url_never_stops_training(tmp_path, runs_dir):
    """The fake trainer (tests/helpers), 3.5 s between steps: the subject is the supervisor's alerter."""
    rules = tmp_path / "alerts.yaml"
    rules.write_text("notify: {webhook: 'http://127.0.0.1:9/refused'}\n"
                     "alerts:\n  - {stalled_minutes: 0.03, do: [notify]}\n", encoding="utf-8")
    cmd = fake_argv("--steps", "2", "--every", "3.5")
    proc = subprocess.run(cockpit_cmd("run", "--alerts", str(rules), "--runs-dir", str(runs_dir), "--wait", "--",
                                      *cmd), cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = RunFolder(Path(proc.stdout.splitlines()[0]))
    alerts = [r for r in _records(run) if r.kind == journal.ALERT]
    assert alerts and alerts[0].data["message"].startswith("no new step for")
    result = alerts[0].data["actions"][0]
    assert result["action"] == "notify:webhook" and not result["ok"] and "refused" in result["detail"].lower()
    assert run.read_status().state == "finished"


@pytest.mark.proc
def test_a_bad_rule_is_one_line_before_launch(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("trainer: sft\nmodel_name_or_path: demo:models/tiny-lm\n"
                      "dataset_name: demo:data/prompt_completion\n"
                      "cockpit:\n  alerts:\n    - {metric: loss, abov: 5}\n  notify: {pager: x}\n", encoding="utf-8")
    proc = subprocess.run(cockpit_cmd("run", str(preset), "--dry-run"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "cockpit.alerts[0]: unknown key 'abov'" in proc.stderr and "cockpit.notify.pager" in proc.stderr


def test_rule_descriptions_name_what_they_watch():
    assert Rule("", "above", 5.0, metric="loss", count=3).describe() == "loss > 5.0 for 3 steps"


JOURNALS = REPO / "tests" / "fixtures" / "journals"


def _spikes(records: list[journal.Record], family: str | None) -> list[str]:
    engine = AlertEngine(builtin_rules(family), clock=_Clock())
    return [f.message for f in engine.feed(records) if f.rule.name.startswith("loss spike")]


def test_the_loss_spike_rule_stays_quiet_on_a_grpo_loss_that_sits_at_zero():
    """Every GRPO demo showed "loss rose 600% over 5 steps (-1.49e-08 → 7.451e-08)": a percentage
    of a value near zero means nothing."""
    demo, bad = journal.read_all(JOURNALS / "demo_grpo_loss.jsonl")
    assert bad == 0 and len(demo) == 40
    assert any(abs(r.data["loss"]) < 1e-6 and r.data["loss"] != 0 for r in demo)
    assert _spikes(demo, "grpo") == []
    # the series of the report: noise around zero, then a rise of 600 % of 1.49e-08
    noise = [3e-08, -2e-08, 1e-08, -1.49e-08, 2e-08, -1e-08, 0.0, 1e-08, 7.451e-08]
    assert _spikes([_m(i + 1, loss=v) for i, v in enumerate(noise)], "grpo") == []


def test_the_loss_spike_rule_fires_on_a_real_spike():
    sft = [2.1, 2.0, 1.9, 1.95, 1.9, 1.85, 6.5]
    fired = _spikes([_m(i + 1, loss=v) for i, v in enumerate(sft)], "sft")
    assert len(fired) == 1 and fired[0].startswith("loss rose") and "→ 6.5 at step 7" in fired[0]
    # the floor: a loss near zero that jumps by half a unit is a spike, not the noise around it
    near_zero = [0.01, -0.02, 0.0, 0.01, 0.0, 0.005, 0.5]
    assert len(_spikes([_m(i + 1, loss=v) for i, v in enumerate(near_zero)], "sft")) == 1
    assert len(_spikes([_m(i + 1, loss=v) for i, v in enumerate(near_zero)], None)) == 1


def test_a_grpo_loss_rising_from_zero_with_the_kl_is_no_spike():
    """Issue 31: open-r1's GRPO under TRL 0.18 (beta 0.04) logged 1.391e-07 → 0.3922 as its policy
    left the reference, and the built-in rule said "loss rose 392%". GRPO's loss is no objective
    that falls; its family's KL rule watches the drift."""
    rising = [1.391e-07, 0.02, 0.08, 0.15, 0.27, 0.3922]
    assert _spikes([_m(i + 1, loss=v) for i, v in enumerate(rising)], "grpo") == []
    assert "loss" not in {r.metric for r in builtin_rules("grpo") if r.condition == "rises_pct"}
    assert "kl" in {r.metric for r in builtin_rules("grpo")}


def test_a_rise_is_taken_of_the_floor_a_rule_gives():
    rise = [_m(i + 1, reward=v) for i, v in enumerate([0.001, 0.0, 0.002, 0.01])]
    loose, floored = parse_rules([{"metric": "reward", "rises_pct": 200, "window": 3, "do": ["journal"]},
                                  {"metric": "reward", "rises_pct": 200, "window": 3, "floor": 0.5,
                                   "do": ["journal"]}])
    assert [f.rule for f in AlertEngine([loose, floored], clock=_Clock()).feed(rise)] == [loose]
    with pytest.raises(CockpitError, match=r"floor: must be a number ≥ 0"):
        parse_rules([{"metric": "loss", "rises_pct": 50, "floor": "big"}])
