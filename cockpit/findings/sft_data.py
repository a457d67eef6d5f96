"""SFT data findings: what `max_length` cuts, how full packed rows are, and the loss mask.

Tokenizing needs the tokenizer and TRL, which the core never imports: `probe` runs
`python -m cockpit.runner.lossmask` in a subprocess and reads its one JSON answer. Used before
launch (`cockpit run --dry-run`, `cockpit lossmask`, the setup screen's loss-mask view) and at
run start by the supervisor's doctor, which turns the answer into findings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.findings.model import Finding
from cockpit.trainers.knowledge import traits

PROBE_TIMEOUT_S = 600.0
CUT_WARNING = 0.05
"""Cutting more than this share of the rows is a warning; fewer is an info line."""
PACKING_WARNING = 0.7
"""Packed rows less full than this waste compute on padding: a warning."""


@dataclass
class Probe:
    truncation: dict[str, Any] = field(default_factory=dict)
    packing: dict[str, Any] | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    assistant_only_loss: bool = False
    completion_only_loss: Any = None
    conversational: bool = False
    chat_template_markers: bool = False


def is_sft(trainer: str | None) -> bool:
    return bool(trainer) and traits(str(trainer)).family == "sft"


def turned_off(doctor: Any) -> bool:
    """Whether a preset's `cockpit.doctor` section turns the SFT data check off (`sft_data:
    false`): then neither the supervisor runs it beside the run nor `--dry-run` before it."""
    return isinstance(doctor, dict) and doctor.get("sft_data") is False


def request_for(trl: dict[str, Any], cockpit: dict[str, Any], info: dict[str, Any], *, rows: int = 0) -> dict:
    return {"trl": trl, "cockpit": cockpit, "info": info, "rows": rows}


def probe(request: dict[str, Any] | None = None, *, run_dir: Path | None = None,
          timeout_s: float = PROBE_TIMEOUT_S, nice: bool = False,
          on_start: Callable[[subprocess.Popen], None] | None = None) -> Probe:
    """Ask the runner side; CockpitError with its one line when it cannot answer (no training
    stack, data or tokenizer not reachable, a TRL whose SFT preparation differs). `on_start` gets
    the process (the doctor keeps it to end it with the run)."""
    argv = [sys.executable, "-m", "cockpit.runner.lossmask"]
    if run_dir is not None:
        argv += ["--run", str(run_dir)]
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=(lambda: os.nice(19)) if nice else None)
    if on_start is not None:
        on_start(proc)
    try:
        stdout, stderr = proc.communicate(json.dumps(request or {}), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise CockpitError(f"measuring the SFT rows took over {timeout_s:.0f}s — try a smaller dataset split "
                           "(cockpit.dataset.split: 'train[:2000]')") from None
    answer = _last_json(stdout)
    if answer is None:
        tail = (stderr or stdout).strip().splitlines()
        raise CockpitError(f"could not measure the SFT rows: {tail[-1] if tail else 'no answer'}")
    if "error" in answer:
        first = (str(answer["error"]).strip().splitlines() or ["no reason given"])[0]
        raise CockpitError(f"could not measure the SFT rows: {first[:300]}")
    return Probe(truncation=answer.get("truncation") or {}, packing=answer.get("packing"),
                 rows=answer.get("rows") or [], assistant_only_loss=bool(answer.get("assistant_only_loss")),
                 completion_only_loss=answer.get("completion_only_loss"),
                 conversational=bool(answer.get("conversational")),
                 chat_template_markers=bool(answer.get("chat_template_markers")))


def _last_json(out: str) -> dict[str, Any] | None:
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


# -- words ---------------------------------------------------------------------------------


def truncation_line(p: Probe) -> str:
    """`max_length 64 cuts 37% of the training rows (longest 211 tokens)`."""
    t = p.truncation
    rows, cut, longest, ml = t.get("rows", 0), t.get("cut", 0), t.get("longest", 0), t.get("max_length")
    of = f" (measured on {rows} of {t.get('of')} rows)" if t.get("sampled") else ""
    if ml is None:
        return f"max_length is off: no row is cut (longest {longest} tokens){of}"
    if p.packing is not None and p.packing.get("strategy") != "bfd":
        return (f"max_length {ml} with packing ({p.packing.get('strategy')}): long rows are split, not cut "
                f"(longest {longest} tokens){of}")
    share = cut / rows if rows else 0.0
    if cut == 0:
        return f"max_length {ml} cuts none of the {rows} training rows (longest {longest} tokens){of}"
    return (f"max_length {ml} cuts {_pct(share)} of the training rows ({cut} of {rows}; longest {longest} "
            f"tokens){of}")


def packing_line(p: Probe) -> str | None:
    k = p.packing
    if not k:
        return None
    return (f"packing ({k.get('strategy')}) fills {_pct(k.get('fill') or 0.0)} of each {p.truncation.get('max_length')}"
            f"-token row: {k.get('packed_rows')} packed rows, {k.get('tokens')} tokens")


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x:.1%}"


def findings(p: Probe) -> list[Finding]:
    """`truncation` (warning past CUT_WARNING, else info) and `packing_efficiency`, at step 0."""
    out = []
    t = p.truncation
    rows = t.get("rows") or 0
    if rows:
        share = (t.get("cut") or 0) / rows
        out.append(Finding(
            "truncation", (0, 0), "warning" if share > CUT_WARNING else "info", truncation_line(p),
            fix=(f"raise max_length (the longest row has {t.get('longest')} tokens), or turn packing on"
                 if share > CUT_WARNING else None),
            evidence=[{"type": "note", "text": f"{t.get('tokens_cut', 0)} of {t.get('tokens', 0)} tokens are cut "
                                               f"({t.get('mode')})"}]))
    k = p.packing
    if k:
        fill = float(k.get("fill") or 0.0)
        out.append(Finding(
            "packing_efficiency", (0, 0), "warning" if fill < PACKING_WARNING else "info", packing_line(p) or "",
            fix="raise per-device batch size or max_length, or use packing_strategy: bfd" if fill < PACKING_WARNING
            else None))
    return out


def render_row(row: dict[str, Any], *, marked: str = "[", end: str = "]", cut: str = "✂") -> str:
    """A row as plain text with the trained spans bracketed (`user: hi [Hello!<|im_end|>]`) and
    `cut` where max_length cuts it."""
    out, inside = [], False
    tokens = row.get("tokens") or []
    a, b = (row.get("kept") or [0, len(tokens)])[:2]
    for j, (text, trained) in enumerate(tokens):
        if trained and not inside:
            out.append(marked)
            inside = True
        elif not trained and inside:
            out.append(end)
            inside = False
        if j == b or (j == a and a > 0):
            out.append(cut)
        out.append(text)
    if inside:
        out.append(end)
    return "".join(out)


def trained_spans(row: dict[str, Any]) -> list[str]:
    """The texts of the runs of tokens the loss trains on, in order."""
    spans, cur = [], []
    for text, trained in row.get("tokens") or []:
        if trained:
            cur.append(text)
        elif cur:
            spans.append("".join(cur))
            cur = []
    if cur:
        spans.append("".join(cur))
    return spans


def mask_summary(p: Probe) -> str:
    """What the mask trains on, in words: the answer to "is assistant_only_loss doing what I think?"."""
    if p.assistant_only_loss:
        what = "assistant_only_loss: true — the loss trains on the assistant replies only"
        if not p.chat_template_markers:
            what += " (the chat template has no {% generation %} markers: TRL swaps in a training template)"
        return what
    if p.completion_only_loss or (p.completion_only_loss is None and not p.conversational and p.rows
                                  and any(not t for r in p.rows for _, t in r.get("tokens") or [])):
        return "completion_only_loss — the loss trains on the completions only"
    return "the loss trains on every token (set assistant_only_loss: true for chat data to train on replies only)"
