"""The corpus of real, hand-labelled trainer_state.json files (tests/fixtures/real_runs/) is whole:
every labelled file is there and parses, every label uses the agreed vocabulary, and every file
names where it came from. Fast: JSON and YAML only, no torch."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "real_runs"
LABELS = CORPUS / "labels.yaml"
PROVENANCE = CORPUS / "PROVENANCE.md"

FAMILIES = {"sft", "dpo", "orpo", "kto", "cpo", "grpo", "ppo", "reward", "seq2seq",
            "classification", "other"}
VERDICTS = {"problem", "healthy", "unclear"}
CLASSES = {
    "overfitting", "train_eval_gap", "nothing_trains", "loss_spike", "grad_spike", "kl_spike",
    "schedule_restart", "warmup_longer_than_run", "lr_zero", "dpo_saturated",
    "chosen_logps_falling", "reward_never_pays", "reward_constant", "length_without_reward",
    "entropy_collapse", "kl_blowup", "clipping_drags_reward",
    "eval_metric_improves_while_loss_rises",
}
OTHER = re.compile(r"^other:[a-z0-9_]+$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _labels() -> list[dict]:
    return yaml.safe_load(LABELS.read_text(encoding="utf-8"))


def _state(label: dict) -> dict:
    # Python's json accepts the bare NaN/Infinity some trainers write.
    return json.loads((CORPUS / label["file"]).read_text(encoding="utf-8"))


def test_labels_are_a_list_of_runs_each_once():
    labels = _labels()
    assert isinstance(labels, list)
    assert len(labels) >= 40, f"the corpus should label at least 40 real runs, has {len(labels)}"
    files = [lab["file"] for lab in labels]
    assert len(files) == len(set(files)), "a file is labelled twice"


@pytest.mark.parametrize("label", _labels(), ids=lambda lab: lab["file"])
def test_each_label_is_well_formed(label):
    path = CORPUS / label["file"]
    assert path.is_file(), f"{label['file']} is labelled but missing"
    state = _state(label)
    history = state.get("log_history")
    assert isinstance(history, list) and history, "no log_history"
    assert label["steps"] == state["global_step"]

    source = label["source"]
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", source["repo"])
    assert source["path"].endswith(".json")
    assert COMMIT.match(source["commit"]), source["commit"]

    assert label["family"] in FAMILIES
    if label["family"] == "grpo":
        assert label["trl_naming"] in {"old", "new"}
    else:
        assert "trl_naming" not in label

    assert label["verdict"] in VERDICTS
    problems = label.get("problems") or []
    if label["verdict"] == "problem":
        assert problems, "a problem run names its problems"
    else:
        assert not problems, "only a problem run has problems"
    for p in problems:
        assert p["class"] in CLASSES or OTHER.match(p["class"]), p["class"]
        first, last = p["steps"]
        assert 0 <= first <= last <= state["global_step"]
        assert p["evidence"].strip()


def test_every_corpus_file_is_labelled():
    labelled = {lab["file"] for lab in _labels()}
    on_disk = {p.name for p in CORPUS.glob("*.json")}
    assert on_disk <= labelled, f"unlabelled: {sorted(on_disk - labelled)}"


def test_provenance_names_every_file_with_its_commit():
    text = PROVENANCE.read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[0].endswith(".json"):
            rows[cells[0]] = cells
    for label in _labels():
        name = Path(label["file"]).name
        if label["file"].startswith("../"):
            continue  # described in ../trainer_states/PROVENANCE.md
        assert name in rows, f"{name} has no row in PROVENANCE.md"
        row = rows[name]
        assert label["source"]["commit"] in row, f"{name}: the commit differs from the label's"
        assert any(COMMIT.match(c) for c in row)


def test_corpus_stays_small():
    total = sum(p.stat().st_size for p in CORPUS.iterdir() if p.is_file())
    assert total < 25 * 1024 * 1024
    assert all(p.stat().st_size < 3 * 1024 * 1024 for p in CORPUS.glob("*.json"))
