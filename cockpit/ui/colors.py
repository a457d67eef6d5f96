"""Colours come from the active Textual theme, never from a palette of our own: every theme
(shipped, the user's, Textual's) works, and a theme switch is followed.

- CSS and `Content` markup name theme variables (`$error`, `$text-success`) and Textual
  resolves them when drawing.
- Rich renderables (a `DataTable`'s cells) cannot read `$variables`: `rich_style` resolves a
  style written with them against the current theme, and the widget builds its cells again when
  the theme changes (`App.theme_changed_signal`).
- Plots: the canvas and axes take the theme's surface and foreground, and each series a theme
  colour (`series_colors`), so a light theme gets dark-enough lines too.
"""

from __future__ import annotations

from rich.style import Style
from textual.app import App
from textual.color import Color, ColorParseError

from cockpit.metrics.plot_colors import FALLBACK

STATE_STYLES = {
    "running": "$success", "starting": "$accent", "queued": "$accent", "stopping": "$warning",
    "finished": "$primary", "stopped": "$warning", "failed": "$error", "killed": "$error",
    "replay": "$secondary",
}
"""The colour of a run's state wherever it is shown (home's runs table, the run header)."""


def rich_style(app: App, style: str) -> Style:
    """`style` ("bold $error", "dim on $panel") as a Rich style, each theme variable taken from
    the current theme (an ANSI theme's colours stay ANSI colours); a variable the theme lacks, or
    one that is not a plain colour (`$text-muted` is "auto 60%"), is left out, not guessed."""
    variables = app.theme_variables
    plain: list[str] = []
    color = bgcolor = None
    words = style.split()
    for i, word in enumerate(words):
        if not word.startswith("$"):
            if word != "on" or i + 1 == len(words) or not words[i + 1].startswith("$"):
                plain.append(word)
            continue
        try:
            parsed = Color.parse(variables.get(word[1:], "")).rich_color
        except ColorParseError:
            continue
        if i and words[i - 1] == "on":
            bgcolor = parsed
        else:
            color = parsed
    return Style.parse(" ".join(plain)) + Style(color=color, bgcolor=bgcolor)


_ORDER = ("primary", "warning", "success", "accent", "error", "secondary")


def series_colors(app: App) -> list[tuple[int, int, int]]:
    """Distinct RGB colours for plot series, from the theme (fallbacks when it lacks some)."""
    return palette_of(app.theme_variables)


def theme_palette(name: str | None = None) -> list[tuple[int, int, int]]:
    """`series_colors` of a theme by name (else the one last picked, else the default) without an
    app: what `cockpit export --png` draws with, so the PNG wears the screen's colours."""
    from textual.theme import BUILTIN_THEMES

    from cockpit.ui.choices import load_choices
    from cockpit.ui.themes import DEFAULT_THEME, load_themes

    themes = dict(BUILTIN_THEMES) | {t.name: t for t in load_themes()[0]}
    wanted = name or load_choices().get("theme") or DEFAULT_THEME
    theme = themes.get(wanted) or themes.get(DEFAULT_THEME) or BUILTIN_THEMES["textual-dark"]
    return palette_of(theme.to_color_system().generate())


def palette_of(variables: dict[str, str]) -> list[tuple[int, int, int]]:
    """The series colours a theme's variables give: its named colours in `_ORDER`, one a hue,
    topped up from `FALLBACK`."""
    out: list[tuple[int, int, int]] = []
    for name in _ORDER:
        raw = variables.get(name)
        if not raw:
            continue
        try:
            rgb = Color.parse(raw).rgb
        except Exception:  # noqa: BLE001 - a theme variable that is not a colour
            continue
        if _new_hue(rgb, out):
            out.append(rgb)
    for rgb in FALLBACK:
        if len(out) >= 6:
            break
        if _new_hue(rgb, out):
            out.append(rgb)
    return out


def _new_hue(rgb: tuple[int, int, int], taken: list[tuple[int, int, int]]) -> bool:
    """Whether `rgb` is a hue none of `taken` has (textual-dark's accent and warning are one
    orange: two series of one panel in one hue cannot be told apart)."""
    import colorsys

    h, _, s = colorsys.rgb_to_hls(*(c / 255 for c in rgb))
    for other in taken:
        h2, _, s2 = colorsys.rgb_to_hls(*(c / 255 for c in other))
        if (s < 0.15) == (s2 < 0.15) and (s < 0.15 or min(abs(h - h2), 1 - abs(h - h2)) < 0.06):
            return False
    return True
