"""Text for a terminal of any width: one-line cells cut at a word with an ellipsis, aligned tables."""

from __future__ import annotations

import re
import shutil


def _width() -> int:
    """The terminal's width (COLUMNS when set; 80 when there is no terminal)."""
    return shutil.get_terminal_size().columns


def clip(text: str, width: int) -> str:
    """`text` on one line, cut to `width` with "…" — at the last word boundary (a space, or
    the / and | between column names) that keeps at least a third of the room."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    cut = text[:width]  # the character at width-1 gives way to "…"; a boundary there is fine
    at = max(cut.rfind(c) for c in " /|")
    cut = cut[:at] if at >= width // 3 else cut[:width - 1]
    return cut.rstrip(" ,;:-(/|") + "…"


def table(rows: list[list[str]], width: int, *, caps: dict[int, int] | None = None,
          shrink: tuple[int, ...] = (), keep: tuple[int, ...] = (0,),
          last_min: int = 14) -> list[str]:
    """Rows as aligned columns in `width`; the last column takes the room left, cut with "…".

    When that room is under `last_min`, the columns in `shrink` give some up, first one first,
    each down to its longest first word (a cut cell keeps one whole word). Cells of `keep`
    columns (names the user types) are never cut: a longer one pushes the rest of its row on.
    """
    if not rows:
        return []
    cells = [[" ".join(str(c).split()) for c in r] for r in rows]
    n = len(cells[0])
    widths = [max(len(r[i]) for r in cells) for i in range(n - 1)]
    for i, cap in (caps or {}).items():
        widths[i] = min(widths[i], cap)

    def room() -> int:
        return width - sum(widths) - (n - 1)

    for i in shrink:
        if room() >= last_min:
            break
        first_word = max(len(re.split(r"[\s/|]", r[i])[0]) for r in cells)
        floor = min(widths[i], max(12, first_word + 1))
        widths[i] = max(floor, widths[i] - (last_min - room()))
    lines = []
    for r in cells:
        parts, used = [], 0
        for i, w in enumerate(widths):
            text = r[i] if i in keep else clip(r[i], w)
            parts.append(text.ljust(w))
            used += max(w, len(text)) + 1
        parts.append(clip(r[-1], max(1, width - used)))
        lines.append(" ".join(parts).rstrip())
    return lines
