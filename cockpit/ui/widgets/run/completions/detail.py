"""One completion in full: the prompt and the completion wrapped, every score, special tokens
marked. The text is the model's, shown literally (`ui.text.markup` fills it in as variables);
special tokens (`<|endoftext|>`, `</s>`, `[PAD]` ...) get a style on top, never a change of
characters, so what is copied is what the model wrote.
"""

from __future__ import annotations

import re
from typing import Any

from textual.content import Content

from cockpit.ui.text import markup, num
from cockpit.ui.widgets.run.completions.view import Column

SPECIAL_TOKEN = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?s>|<(?:pad|unk|eos|bos|mask)>|\[(?:PAD|CLS|SEP|UNK|MASK)\]")
"""Token spellings tokenizers use for their special tokens."""


PAIR = ("chosen", "rejected")
"""A preference trainer's sample carries the pair its loss is computed on (`runner/samples.py`):
the two texts, their log-probs under the policy and the reference, and the margin."""
PAIR_SHOWN = frozenset({*PAIR, "margin", *(f"{ref}logps/{k}" for ref in ("", "ref ") for k in PAIR)})


def detail(row: dict[str, Any], columns: list[Column], *, group: int | None = None,
           group_size: int | None = None) -> Content:
    extras = row.get("extra") or {}
    pair = all(isinstance(extras.get(k), str) for k in PAIR)
    scores = "  ".join(f"{k}={num(v)}" for k, v in row["rewards"].items())
    if row.get("advantage") is not None or scores:
        scores += f"  advantage={num(row.get('advantage'))}"
    extra = "  ".join(f"{c.name}={_cell(c.value(row))}" for c in columns
                      if c.kind == "extra" and not (pair and c.name in PAIR_SHOWN))
    where = f"step {row['step']}"
    if group is not None and group_size:
        where += f" · prompt {group + 1}, {group_size} generation{'s' if group_size != 1 else ''}"
    parts = [markup("[b]prompt[/b]\n$prompt", prompt=row["prompt"])]
    if pair:
        for side in PAIR:
            parts.append(markup("[b]$side[/b] [dim]log-prob $logp (reference $ref)[/]\n$text", side=side,
                                logp=num(extras.get(f"logps/{side}")), ref=num(extras.get(f"ref logps/{side}")),
                                text=extras[side]))
        parts.append(markup("[b]margin[/b] $margin [dim]β·((chosen − reference) − (rejected − reference)): "
                            "this pair's share of rewards/margins, at this step[/]",
                            margin=num(extras.get("margin"))))
    parts.append(markup("[b]$what[/b]\n$completion", completion=row["completion"],
                        what="the model's own answer at this step (greedy)" if pair else "completion"))
    said = "  ".join(s for s in (scores.strip(), f"source={row.get('source') or '-'}") if s)
    parts.append(markup("[dim]$said[/]\n[dim]$extra$where[/]", said=said, extra=f"{extra}\n" if extra else "",
                        where=where))
    return Content("\n").join(parts).highlight_regex(SPECIAL_TOKEN, style="$text-accent")


def _cell(value: Any) -> str:
    return num(value) if isinstance(value, (int, float)) or value is None else str(value)
