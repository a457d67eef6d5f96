"""Series colours taken from the active Textual theme, so plots follow theme switches.

textual-plotext's "auto" plot theme only sets the canvas and axes from the app
theme; the line colours would stay plotext's fixed sequence. Drawing each
series with a theme colour makes a light theme get dark-enough lines too.
"""

from __future__ import annotations

from textual.app import App
from textual.color import Color

_ORDER = ("primary", "warning", "success", "accent", "error", "secondary")
_FALLBACK = ((0, 130, 200), (245, 130, 48), (60, 180, 75), (145, 30, 180), (230, 25, 75),
             (70, 240, 240))


def series_colors(app: App) -> list[tuple[int, int, int]]:
    """Distinct RGB colours for plot series, from the theme (fallbacks when it lacks some)."""
    variables = app.theme_variables
    out: list[tuple[int, int, int]] = []
    for name in _ORDER:
        raw = variables.get(name)
        if not raw:
            continue
        try:
            rgb = Color.parse(raw).rgb
        except Exception:  # noqa: BLE001 - a theme variable that is not a colour
            continue
        if rgb not in out:
            out.append(rgb)
    for rgb in _FALLBACK:
        if len(out) >= 6:
            break
        if rgb not in out:
            out.append(rgb)
    return out
