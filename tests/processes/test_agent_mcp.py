"""`cockpit mcp` driven by the MCP SDK's own client over stdio (ClientSession + stdio_client), as an
agent's host starts it: one server process for the module's read-only tests, on the suite's shared
runs (the farm's SFT run with its checkpoints, two real GRPO run folders with their completions
store from tests/fixtures/findings, a hand-made run with a spike, a NaN, escape sequences and
secrets); one more with --allow-actions, on a live fake-trainer run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

import helpers
from cockpit.agent.answers import MAX_BYTES, bound
from cockpit.run import journal
from cockpit.run.completions_store import CompletionsWriter
from cockpit.run.folder import RunFolder

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
READ_TOOLS = {"runs", "summary", "metrics", "findings", "completions", "checkpoints", "compare"}
ACTION_TOOLS = {"stop_and_save", "resume", "sample"}
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Client:
    """Sync calls into a ClientSession that lives on a portal's event loop."""

    def __init__(self, portal, session) -> None:
        self.portal, self.session = portal, session

    def tools(self):
        return self.portal.call(self.session.list_tools).tools

    def call(self, name: str, **args):
        """(is_error, the answer: parsed JSON, or the error's line), checking each answer's bounds."""
        res = self.portal.call(self.session.call_tool, name, args)
        text = res.content[0].text
        assert len(text.encode()) <= MAX_BYTES, (name, len(text))
        assert not RAW_CONTROL.search(text.replace("\n", "").replace("\t", "")), name
        return res.is_error, (text if res.is_error else json.loads(text))


def _env() -> dict[str, str]:
    keep = ("COCKPIT_CACHE_DIR", "COCKPIT_CONFIG_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "OMP_NUM_THREADS")
    return {"PYTHONPATH": str(REPO), **{k: os.environ[k] for k in keep if k in os.environ}}


def _serve(runs: Path, *flags: str):
    """A context that yields a Client of `cockpit mcp --runs-dir RUNS FLAGS...` over stdio."""
    from contextlib import contextmanager

    @contextmanager
    def session():
        params = StdioServerParameters(command=sys.executable, env=_env(),
                                       args=["-m", "cockpit.cli", "mcp", "--runs-dir", str(runs), *flags])
        with start_blocking_portal() as portal, \
                portal.wrap_async_context_manager(stdio_client(params)) as (read, write), \
                portal.wrap_async_context_manager(ClientSession(read, write)) as s:
            portal.call(s.initialize)
            yield Client(portal, s)

    return session()


def _hand_made(runs: Path) -> RunFolder:
    """A 3,000-step SFT run: a loss spike at 1,500, NaN at 2,000, a key and a completion holding
    escape sequences, a 20,000-character completion, and an environment value that must not leave."""
    records = [journal.run_started("sft", max_steps=3000)]
    for s in range(1, 3001):
        loss = 50.0 if s == 1500 else float("nan") if s == 2000 else 2.0 / (1 + s / 100)
        records.append(journal.metrics(s, {"loss": loss, "learning_rate": 1e-4, "odd\x1b[31mkey": 1.0}))
        if s % 1000 == 0:
            records.append(journal.Record(journal.EVAL, {"eval_loss": 3.0 - s / 1000}, step=s))
    records.append(journal.run_ended("finished", reason="training finished"))
    run = helpers.make_run_folder(runs, "hand-made", records=records)
    run.run_yaml.write_text("trainer: sft\nmodel_name_or_path: demo:models/tiny-lm\nlearning_rate: 1.0e-4\n"
                            "cockpit:\n  env:\n    WANDB_PROJECT: do-not-leak-this\n"
                            "    HF_TOKEN: secret:abc/HF_TOKEN\n", encoding="utf-8")
    writer = CompletionsWriter(run.path)
    ref = writer.append(3000, [{"prompt": "say \x1b]0;pwned\x07hi", "completion": "x" * 20_000,
                                "rewards": {"r": 1.0}},
                               {"prompt": "p2", "completion": "short \x1b[2J answer", "rewards": {"r": 0.0}}],
                        source="samples")
    writer.close()
    with journal.JournalWriter(run.events) as jw:
        jw.write(ref)
    return run


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    runs = tmp_path_factory.mktemp("mcp") / "runs"
    helpers.farm_copy("sft", runs)
    for name in ("grpo-wasted-groups", "grpo-short-reward"):
        shutil.copytree(FIXTURES / "findings" / name, runs / name)
    _hand_made(runs)
    with _serve(runs) as client:
        yield runs, client


def test_the_read_only_tools_are_listed_and_no_action_is(shared):
    _, client = shared
    tools = {t.name: t for t in client.tools()}
    assert set(tools) == READ_TOOLS
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
        assert tool.description
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), (tool.name, name)
    err, said = client.call("stop_and_save", run="grpo-wasted-groups")
    assert err and "stop_and_save" in said


def test_runs_lists_every_run_with_numbers(shared):
    _, client = shared
    err, doc = client.call("runs")
    assert not err
    by = {r["name"]: r for r in doc["runs"]}
    assert {"grpo-wasted-groups", "grpo-short-reward", "hand-made"} <= set(by)
    wasted = by["grpo-wasted-groups"]
    assert wasted["state"] == "killed" and wasted["trainer"] == "grpo"
    assert wasted["step"] == 19 and wasted["max_steps"] == 30 and isinstance(wasted["progress"], float)
    assert isinstance(wasted["last"]["reward"], float) and wasted["last"]["step"] == 19
    assert isinstance(wasted["findings"], int) and isinstance(wasted["journal_quiet_s"], float)
    err, doc = client.call("runs", limit=1)
    assert len(doc["runs"]) == 1 and doc["cut"] == [f"runs: 1 of {doc['count']} kept"]


def test_summary_says_progress_config_and_best_eval_without_env_values(shared):
    runs, client = shared
    err, doc = client.call("summary", run="hand-made")
    assert not err
    assert doc["progress"]["step"] == 3000 and doc["progress"]["fraction"] == 1.0
    assert doc["config"]["model_name_or_path"] == "demo:models/tiny-lm"
    assert doc["config"]["env_names"] == ["HF_TOKEN", "WANDB_PROJECT"]
    assert "do-not-leak-this" not in json.dumps(doc) and "abc/HF_TOKEN" not in json.dumps(doc)
    assert doc["best_eval"]["eval_loss"] == {"best": 0.0, "at_step": 3000, "direction": "min", "last": 0.0,
                                             "last_step": 3000}
    farm = next(p.name for p in runs.iterdir() if p.name.startswith("demo-sft"))
    err, doc = client.call("summary", run=farm)
    assert doc["best_eval"]["eval_loss"]["at_step"] in (2, 4)
    assert doc["checkpoints"]["count"] == 2


def test_metrics_keys_and_a_downsampled_series_keep_the_spike_and_name_the_nan(shared):
    _, client = shared
    _err, doc = client.call("metrics", run="hand-made")
    assert {k["key"] for k in doc["keys"]} == {"loss", "learning_rate", "odd[31mkey", "eval_loss"}  # no ESC
    _err, doc = client.call("metrics", run="hand-made", keys=["loss"], points=50)
    loss = doc["series"]["loss"]
    assert loss["count"] == 3000 and len(loss["points"]) <= 50 and loss["downsampled"] is True
    assert loss["max"] == 50.0 and [1500, 50.0] in loss["points"]  # the spike survives MinMaxLTTB
    assert loss["nonfinite"] == {"count": 1, "first_steps": [2000]}
    _err, doc = client.call("metrics", run="hand-made", keys=["loss"], first=1990, last=2010)
    assert doc["series"]["loss"]["count"] == 21 and doc["series"]["loss"]["first_step"] == 1990
    _err, doc = client.call("metrics", run="hand-made", keys=["no_such_key"])
    assert doc["unknown_keys"] == ["no_such_key"] and "loss" in doc["known_keys"]


def test_findings_with_evidence_and_what_was_checked_on_a_real_grpo_run(shared):
    _, client = shared
    err, doc = client.call("findings", run="grpo-wasted")
    assert not err
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"wasted_groups", "clipping"} <= kinds, kinds
    clipping = next(f for f in doc["findings"] if f["kind"] == "clipping")
    assert clipping["steps"] == [1, 19] and clipping["fix"]
    rows = [r for ev in clipping["evidence"] if ev["type"] == "completions" for r in ev["rows"]]
    assert rows and all(isinstance(r["step"], int) for r in rows)
    assert doc["checked"]["family"] == "grpo" and doc["checked"]["summary"].startswith("checked ")
    assert doc["checked"]["quiet"] and all(q["note"] for q in doc["checked"]["quiet"])


def test_findings_on_a_trainer_state_json_from_the_corpus(shared):
    _, client = shared
    path = FIXTURES / "trainer_states" / "trl_dpo_nan_gradnorm_midrun.json"
    err, doc = client.call("findings", run=str(path))
    assert not err
    nan = next(f for f in doc["findings"] if f["kind"] == "nonfinite_values")
    assert nan["steps"] == [18, 74]
    points = next(ev["points"] for ev in nan["evidence"] if ev["type"] == "metric")
    assert [18, "nan"] in points  # JSON has no NaN: the string, every other value a number


def test_completions_by_step_best_worst_reward_and_search(shared):
    _, client = shared
    err, doc = client.call("completions", run="grpo-short-reward", order="best", limit=3)
    assert not err and doc["logged_steps"]["last"] == 18 and len(doc["rows"]) == 3
    scores = [r["rewards"]["short_reward"] for r in doc["rows"]]
    assert scores == sorted(scores, reverse=True)
    assert set(doc["per_reward"]["short_reward"]) == {"rows", "mean", "min", "max", "distinct"}
    err, worst = client.call("completions", run="grpo-short-reward", order="worst", reward="short_reward",
                             steps="1:18", limit=2)
    assert worst["steps_read"] == 18 and worst["rows"][0]["rewards"]["short_reward"] <= scores[-1]
    err, doc = client.call("completions", run="grpo-wasted-groups", step=7, limit=50)
    assert {r["step"] for r in doc["rows"]} == {7}
    word = doc["rows"][0]["completion"].split()[0]
    err, found = client.call("completions", run="grpo-wasted-groups", search=word, limit=50)
    assert found["rows"] and all(word.lower() in (r["prompt"] + r["completion"]).lower() for r in found["rows"])
    err, said = client.call("completions", run="grpo-wasted-groups", step=999)
    assert err and "no completions at step 999" in said and "\n" not in said
    err, said = client.call("completions", run="grpo-wasted-groups", order="worst", reward="nope")
    assert err and "short_reward" in said


def test_completions_text_is_cut_and_escapes_never_leave(shared):
    _, client = shared
    _err, doc = client.call("completions", run="hand-made", chars=4000, limit=50)
    long = next(r for r in doc["rows"] if r["completion"].startswith("xxx"))
    assert "[cut: 20,000 characters]" in long["completion"] and len(long["completion"]) < 4100
    text = json.dumps(doc)
    assert "\x1b" not in text and "\\u001b" not in text and "\x07" not in text and "\\u0007" not in text
    assert any(r["prompt"] == "say ]0;pwnedhi" for r in doc["rows"])


def test_checkpoints_and_compare_on_the_farm_run(shared):
    runs, client = shared
    farm = next(p.name for p in runs.iterdir() if p.name.startswith("demo-sft"))
    err, doc = client.call("checkpoints", run=farm)
    assert not err
    assert [c["step"] for c in doc["checkpoints"]] == [4, 2] and all(c["complete"] for c in doc["checkpoints"])
    assert doc["key_metric"] == "loss" and isinstance(doc["checkpoints"][0]["size"], int)
    err, doc = client.call("compare", runs=["grpo-wasted-groups", "grpo-short-reward"])
    assert not err and [r["run"] for r in doc["runs"]] == ["grpo-wasted-groups", "grpo-short-reward"]
    assert doc["shared_step"] == 18 and "reward" in doc["runs"][0]["metrics"]
    assert "learning_rate" in doc["config_differs"]
    err, said = client.call("compare", runs=["grpo-wasted-groups"])
    assert err and "runs: List should have at least 2 items" in said and "\n" not in said


def test_bad_input_is_one_line(shared):
    _, client = shared
    err, said = client.call("summary", run="grpo-wastd-groups")
    assert err and "did you mean 'grpo-wasted-groups'" in said and "\n" not in said
    err, said = client.call("findings", run="/nonexistent/trainer_state.json")
    assert err and "no such file" in said and "Traceback" not in said
    err, said = client.call("runs", limit=500)  # outside the schema: pydantic's lines, as one
    assert err and said.endswith("limit: Input should be less than or equal to 100") and "\n" not in said


def test_bound_halves_the_biggest_list_and_says_so():
    doc = bound({"rows": [{"completion": "y" * 1000} for _ in range(200)], "small": [1, 2, 3], "x": float("inf")})
    assert len(json.dumps(doc)) <= MAX_BYTES
    assert doc["small"] == [1, 2, 3] and doc["x"] == "inf"
    assert doc["cut"] == [f"rows: {len(doc['rows'])} of 200 kept"]


@pytest.mark.proc
def test_actions_only_with_the_flag_each_in_the_journal_and_rate_limited(tmp_path):
    """The actions' own path, on a run that reads live: its status names this test's process as its
    supervisor (what a stop-and-save does to the trainer is test_processes' subject)."""

    runs = tmp_path / "runs"
    shutil.copytree(FIXTURES / "findings" / "grpo-wasted-groups", runs / "grpo-wasted-groups")
    live = helpers.live(helpers.make_run_folder(runs, "live", state="running"))
    with _serve(runs, "--allow-actions") as client:
        assert {t.name for t in client.tools()} == READ_TOOLS | ACTION_TOOLS
        err, said = client.call("stop_and_save", run="grpo-wasted-groups")
        assert err and "not running" in said
        err, doc = client.call("stop_and_save", run="live")
        assert not err and doc["asked"] == "stop_and_save"
        assert json.loads((live.control / "stop_save").read_text())["by"] == "agent"
        records, _ = journal.read_all(live.events)
        said_by = [r for r in records if r.kind == journal.WARNING and r.data.get("code") == "agent"]
        assert len(said_by) == 1 and "stop" in said_by[0].data["message"]
        assert "through `cockpit mcp`" in said_by[0].data["message"]
        err, said = client.call("stop_and_save", run="live")
        assert err and "try again in" in said
        err, said = client.call("resume", run="grpo-wasted-groups")
        assert err and "no complete checkpoint" in said  # the CLI's own refusal, in one line
        err, said = client.call("sample", run="grpo-wasted-groups", prompts=["a"] * 9)
        assert err and "at most 8" in said
        err, said = client.call("sample", run="grpo-wasted-groups", checkpoint="latest")
        assert err and "no checkpoints yet" in said  # `cockpit sample`'s line: no sampler started


@pytest.mark.proc
def test_streamable_http_wants_the_token(tmp_path):
    import urllib.error
    import urllib.request

    port = helpers.free_port()
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_MCP_TOKEN"}
    short = subprocess.run(helpers.cockpit_cmd("mcp", "--http", "--runs-dir", str(tmp_path)), capture_output=True,
                           text=True, env={**env, "PYTHONPATH": str(REPO), "COCKPIT_MCP_TOKEN": "abc"}, timeout=60)
    assert short.returncode == 2 and "give at least 16" in short.stderr and short.stderr.count("\n") == 1
    proc = subprocess.Popen(helpers.cockpit_cmd("mcp", "--http", "--port", str(port), "--runs-dir", str(tmp_path)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**env, "PYTHONPATH": str(REPO)})
    try:
        token = ""
        deadline = time.monotonic() + 60
        while not token and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if "Bearer " in line:
                token = line.rsplit("Bearer ", 1)[1].strip()
        assert token
        url = f"http://127.0.0.1:{port}/mcp"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        for auth in (None, "Bearer wrong"):
            req = urllib.request.Request(url, data=body, method="POST", headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                **({"Authorization": auth} if auth else {})})
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(req, timeout=5)
                    raise AssertionError("answered without the token")
                except urllib.error.HTTPError as exc:
                    assert exc.code == 401
                    break
                except urllib.error.URLError:  # not listening yet
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        with start_blocking_portal() as portal:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            with portal.wrap_async_context_manager(streamable_http_client(url, http_client=http)) as (read, write), \
                    portal.wrap_async_context_manager(ClientSession(read, write)) as s:
                portal.call(s.initialize)
                assert {t.name for t in portal.call(s.list_tools).tools} == READ_TOOLS
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("chunk", [7, 64, 4 << 20])
def test_newest_record_is_the_last_of_its_kind_read_backwards_in_chunks(tmp_path, chunk):
    """What `checkpoints` reads of a 100k-step journal (the newest run_started): the same record
    a read of every line finds, whatever the chunk cuts through."""
    from cockpit.run.summaries import newest_record

    path = tmp_path / "events.jsonl"
    records = [journal.run_started("sft", max_steps=9, output_dir="/first"),
               *(journal.metrics(s, {"loss": 1.0, "note_run_started": 0.0}) for s in range(1, 40)),
               journal.run_started("sft", max_steps=9, output_dir="/second", resumed_from="/x/checkpoint-20"),
               *(journal.metrics(s, {"loss": 1.0}) for s in range(40, 50))]
    with journal.JournalWriter(path) as jw:
        jw.write_all(records)
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"kind":"run_started","data":{"trainer":"cut')  # a torn last line: not a record
    found = newest_record(path, journal.RUN_STARTED, chunk=chunk)
    assert found is not None and found.data["output_dir"] == "/second"
    assert newest_record(path, journal.STOP_REQUESTED, chunk=chunk) is None
    assert newest_record(tmp_path / "none.jsonl", journal.RUN_STARTED) is None
    with open(path, "ab") as fh:  # the torn line written whole, and a later one: read from where it stopped
        fh.write(b'"}}\n')
    with journal.JournalWriter(path) as jw:
        jw.write(journal.run_started("sft", max_steps=9, output_dir="/third"))
    assert newest_record(path, journal.RUN_STARTED, chunk=chunk).data["output_dir"] == "/third"
    path.unlink()  # replaced: read from the start again
    with journal.JournalWriter(path) as jw:
        jw.write_all(records[:3])
    assert newest_record(path, journal.RUN_STARTED, chunk=chunk).data["output_dir"] == "/first"


def test_without_the_sdk_one_line_names_the_extra(monkeypatch, capsys):
    from cockpit.cli import main

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # what a light install finds
    assert main(["mcp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'cockpit[mcp]'" in err


def test_skills_prints_the_guide(capsys):
    from cockpit.cli import main

    assert main(["mcp", "--skills"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("---\nname: cockpit-trl-runs\n")
    for tool in READ_TOOLS | ACTION_TOOLS:
        assert f"`{tool}(" in out, tool


def test_a_reader_keeps_the_runs_asked_last_and_follows_a_growing_one(runs_dir):
    from cockpit.agent.reader import KEPT_RUNS, Reader

    for i in range(KEPT_RUNS + 2):
        helpers.make_run_folder(runs_dir, f"r{i}")
    reader = Reader(runs_dir)
    for i in range(KEPT_RUNS + 2):
        assert reader.summary(f"r{i}")["progress"]["step"] == 3
    assert len(reader._followed) == KEPT_RUNS and "r0" not in {Path(k).name for k in reader._followed}
    with journal.JournalWriter(runs_dir / "r9" / "events.jsonl") as jw:
        jw.write(journal.metrics(4, {"loss": 0.25}))
    assert reader.metrics("r9", ["loss"])["series"]["loss"]["last"] == 0.25  # what it gained, read
