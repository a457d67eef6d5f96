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


def detail(row: dict[str, Any], columns: list[Column], *, group: int | None = None,
           group_size: int | None = None) -> Content:
    scores = "  ".join(f"{k}={num(v)}" for k, v in row["rewards"].items())
    extra = "  ".join(f"{c.name}={_cell(c.value(row))}" for c in columns if c.kind == "extra")
    where = f"step {row['step']}"
    if group is not None and group_size:
        where += f" · prompt {group + 1}, {group_size} generation{'s' if group_size != 1 else ''}"
    content = markup("[b]prompt[/b]\n$prompt\n[b]completion[/b]\n$completion\n"
                     "[dim]$scores  advantage=$advantage  source=$source[/]\n[dim]$extra$where[/]",
                     prompt=row["prompt"], completion=row["completion"], scores=scores,
                     advantage=num(row.get("advantage")), source=row.get("source") or "-",
                     extra=f"{extra}\n" if extra else "", where=where)
    return content.highlight_regex(SPECIAL_TOKEN, style="$text-accent")


def _cell(value: Any) -> str:
    return num(value) if isinstance(value, (int, float)) or value is None else str(value)
