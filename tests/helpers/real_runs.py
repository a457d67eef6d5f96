"""The judge against the hand-labelled real runs of tests/fixtures/real_runs (labels.yaml): per
kind, how many labelled problems it names (the right kind, steps overlapping the label's) and how
many warnings it gives on runs labelled healthy. `tests/unit/test_findings_real_runs.py` holds the
table `docs/findings.md` prints; `python tests/helpers/real_runs.py` prints it afresh.

No torch: the judge reads the trainer_state.json files through the replay loader.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # tests/
CORPUS = HERE / "fixtures" / "real_runs"
LABELS = CORPUS / "labels.yaml"
ZOO = HERE / "fixtures" / "zoo"
ZOO_LABELS = ZOO / "labels.yaml"

CLASS_KIND = {"other:clipping": "clipping", "other:wasted_groups": "wasted_groups",
              "other:nonfinite_values": "nonfinite_values", "other:loss_rises_in_warmup": "loss_rises_in_warmup",
              "other:memorisation_no_eval": "memorisation_no_eval", "other:kl_nonzero_at_start": "kl_nonzero_at_start",
              "other:best_metric_inverted": "best_metric_inverted",
              "other:reward_model_at_chance": "reward_model_at_chance",
              "other:ppo_update_too_large": "ppo_update_too_large"}
"""Label classes named differently from the kind that answers them."""


@dataclass
class Family:
    """One family's runs: how many, and what the judge did on them."""
    family: str
    runs: int = 0
    healthy: int = 0
    labelled: int = 0
    named: int = 0
    warned_healthy: list[str] = field(default_factory=list)
    """"file: kind" of each warning on a run labelled healthy"""


@dataclass
class Row:
    kind: str
    labelled: list[str] = field(default_factory=list)
    """"file [first, last]" of each labelled problem of this kind"""
    named: list[str] = field(default_factory=list)
    """the labelled problems the judge named"""
    false_warnings: list[str] = field(default_factory=list)
    """"file (steps)" of each warning it gave on a run labelled healthy"""
    unlabelled: list[str] = field(default_factory=list)
    """findings on problem runs that name no labelled problem (not counted as false warnings:
    a label lists what the labeller saw)"""
    healthy_judged: int = 0
    """how many runs labelled healthy the kind's rule ran on (it read what it needs there)"""


def load_labels() -> list[dict]:
    from cockpit.files import safe_load

    return list(safe_load(LABELS.read_text()) or [])


def zoo_labels() -> list[dict]:
    """The zoo's runs (tests/fixtures/zoo/labels.yaml), each judged twice, as the corpus labels
    them: its journal (`<run>/events.jsonl`, the live path's records) and its trainer_state.json
    (the replay path's), with `file` relative to the corpus folder."""
    from cockpit.files import safe_load

    out = []
    for run in safe_load(ZOO_LABELS.read_text()) or []:
        for what in ("events.jsonl", "trainer_state.json"):
            if (ZOO / run["run"] / what).is_file():
                out.append({**run, "file": f"../zoo/{run['run']}/{what}", "zoo": True})
    return out


def all_labels() -> list[dict]:
    return load_labels() + zoo_labels()


@functools.cache
def judge_file(path: Path):
    """The judge on one labelled file, once a test session (the table's tests each read every
    file; a Judgement is not changed by its readers)."""
    from cockpit.findings import report

    return report.judged_run(report.load(path.parent if path.name == "events.jsonl" else path))


def records_of(path: Path) -> tuple[str | None, list]:
    """(the trainer, the run's journal records in order) as a live judge would have read them:
    a journal's own records, or a trainer_state.json's entries as the metrics and eval records the
    callback would have written (NaN kept), after a run_started that carries its max_steps."""
    import math

    import orjson

    from cockpit.run import journal

    if path.name == "events.jsonl":
        records, _ = journal.read_all(path)
        started = next((r for r in records if r.kind == journal.RUN_STARTED), None)
        return (started.data.get("trainer") if started else None), records
    state = orjson.loads(path.read_bytes().replace(b"NaN", b"null"))
    out = [journal.run_started("x", max_steps=state.get("max_steps"))]
    for e in state["log_history"]:
        if "train_runtime" in e:
            continue
        values = {k: (math.nan if v is None else v) for k, v in e.items()
                  if k not in ("step", "epoch") and (v is None or isinstance(v, (int, float)))}
        make = journal.eval_metrics if any(k.startswith("eval_") for k in values) else journal.metrics
        out.append(make(int(e["step"]), values, epoch=e.get("epoch")))
    return None, out


def judged_at_prefixes(path: Path, polls: int = 12) -> dict[str, tuple[int, str, str]]:
    """What the supervisor's live judge would have said, poll by poll: the judge (`detect`, as
    the supervisor calls it) on `polls` growing prefixes of the run's metric records, each kind
    it ever said with (the step of the first poll that said it, its severity then, its summary)."""
    from cockpit.findings.judge import detect
    from cockpit.metrics.store import MetricStore
    from cockpit.run import journal

    trainer, records = records_of(path)
    at = [i for i, r in enumerate(records) if r.kind in (journal.METRICS, journal.EVAL)]
    said: dict[str, tuple[int, str, str]] = {}
    for k in sorted({max(3, len(at) * f // polls) for f in range(1, polls + 1)}):
        if k > len(at):
            continue
        upto = records[:at[k - 1] + 1]
        for f in detect(MetricStore.from_records(upto), trainer):
            if f.kind not in said or (said[f.kind][1] == "info" and f.severity != "info"):
                said[f.kind] = (upto[-1].step, f.severity, f.summary)
    return said


def _name(file: str) -> str:
    """The file's name in the table: a corpus file's name, a zoo run's `zoo/<run>/<file>`."""
    parts = file.split("/")
    return "/".join(parts[-3:]) if file.startswith("../zoo/") else parts[-1]


FAMILIES: dict[str, Family] = {}
"""The last `evaluate`'s families (`family_table`)."""


def evaluate(labels: list[dict] | None = None) -> tuple[dict[str, Row], list[str]]:
    """(kind → row, labelled problems of classes no kind answers), over the corpus and the zoo."""
    from cockpit.findings.kinds import KINDS

    rows = {k: Row(k) for k in KINDS}
    unanswered: list[str] = []
    FAMILIES.clear()
    for run in labels if labels is not None else all_labels():
        path = (CORPUS / run["file"]).resolve()
        judged = judge_file(path)
        found = judged.findings
        name = _name(run["file"])
        verdict = run.get("verdict")
        fam = FAMILIES.setdefault(run["family"], Family(run["family"]))
        fam.runs += 1
        fam.healthy += verdict == "healthy"
        fam.labelled += len(run.get("problems") or [])
        if verdict == "healthy":
            ran = {c.kind for c in judged.checks if c.ran}
            for kind in rows:
                # the overfitting rule says the eval-metric case too
                if kind in ran or (kind == "eval_metric_improves_while_loss_rises" and "overfitting" in ran):
                    rows[kind].healthy_judged += 1
        used: set[int] = set()
        for p in run.get("problems") or []:
            cls = str(p["class"])
            kind = CLASS_KIND.get(cls, cls)
            first, last = (int(s) for s in p["steps"])
            where = f"{name} [{first}, {last}]"
            if kind not in rows:
                unanswered.append(f"{cls}: {where}")
                continue
            rows[kind].labelled.append(where)
            hit = [i for i, f in enumerate(found) if f.kind == kind
                   and (f.steps is None or (f.steps[0] <= last and first <= f.steps[1]))]
            if hit:
                rows[kind].named.append(where)
                fam.named += 1
                used.update(hit)
        for i, f in enumerate(found):
            if f.kind not in rows or i in used or (f.severity == "info" and verdict == "healthy"):
                continue
            at = f"{name} ({'whole run' if f.steps is None else f'{f.steps[0]}–{f.steps[1]}'})"
            if verdict == "healthy":
                rows[f.kind].false_warnings.append(at)
                fam.warned_healthy.append(f"{at}: {f.kind}")
            elif verdict == "problem":
                rows[f.kind].unlabelled.append(at)
    return rows, unanswered


def table(rows: dict[str, Row]) -> str:
    """The markdown table of docs/findings.md, and under it the real files each kind names and
    the healthy runs it warned on."""
    out = ["| kind | labelled problems | named | recall | healthy runs it judged | warnings on them |",
           "|---|---|---|---|---|---|"]
    for r in rows.values():
        recall = f"{len(r.named) / len(r.labelled):.0%}" if r.labelled else "–"
        named = str(len(r.named)) if r.labelled else "–"
        out.append(f"| `{r.kind}` | {len(r.labelled)} | {named} | {recall} | {r.healthy_judged} | "
                   f"{len(r.false_warnings)} |")
    out += ["", "Named on (file [first, last step] of the label):", ""]
    for r in rows.values():
        if r.named:
            out.append(f"- `{r.kind}`: " + "; ".join(f"`{w.split(' [')[0]}` [{w.split(' [')[1]}" for w in r.named))
    missed = [(r.kind, w) for r in rows.values() for w in r.labelled if w not in r.named]
    false = [(r.kind, w) for r in rows.values() for w in r.false_warnings]
    out += ["", "Missed: " + ("; ".join(f"`{k}` {w}" for k, w in missed) if missed else "none") + ".",
            "Warnings on healthy runs: " + ("; ".join(f"`{k}` {w}" for k, w in false) if false else "none") + "."]
    out += ["", "Per family (a zoo run counts twice: its journal and its trainer_state.json):", "",
            "| family | files judged | healthy | labelled problems | named | recall | warnings on healthy |",
            "|---|---|---|---|---|---|---|"]
    for f in sorted(FAMILIES.values(), key=lambda f: f.family):
        recall = f"{f.named / f.labelled:.0%}" if f.labelled else "–"
        out.append(f"| {f.family} | {f.runs} | {f.healthy} | {f.labelled} | {f.named} | {recall} | "
                   f"{len(f.warned_healthy)} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    rows, unanswered = evaluate()
    print(table(rows))
    for r in rows.values():
        missed = [w for w in r.labelled if w not in r.named]
        for w in missed:
            print(f"MISSED {r.kind}: {w}", file=sys.stderr)
        for w in r.false_warnings:
            print(f"FALSE  {r.kind}: {w}", file=sys.stderr)
        for w in r.unlabelled:
            print(f"EXTRA  {r.kind}: {w}", file=sys.stderr)
    for u in unanswered:
        print(f"NO KIND {u}", file=sys.stderr)
