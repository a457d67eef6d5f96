"""Which colour each series of a panel wears: one rule for the screen's panels and the exported
PNG (`metrics.export.write_png`), so a series has the same colour in both.

The palette (a few distinct RGB colours) comes from the theme on the screen
(`ui.colors.series_colors`) and from the same theme's colours for a PNG; this module only says
which palette entry, or which shade of one, a series gets:

- one run: a colour per train metric, in the panel's order; an eval series its eval set's colour,
  taken from the end of the palette (the default set first), the same on every panel of the run,
  so `eval_loss` is never `loss`'s colour and `eval_g0_*` is one colour everywhere;
- a compare: a colour per run, the same on every panel; each further metric of a run a shade of
  that run's colour, counted among that run's own metrics.
"""

from __future__ import annotations

from collections.abc import Sequence

RGB = tuple[int, int, int]

FALLBACK: tuple[RGB, ...] = ((0, 130, 200), (245, 130, 48), (60, 180, 75), (145, 30, 180),
                             (230, 25, 75), (70, 240, 240))
"""Distinct colours a palette is topped up with (a theme with fewer distinct hues)."""
_SHADES = (0.45, -0.35, 0.7, -0.55, 0.25, -0.2, 0.85, -0.7, 0.12, -0.1)


def is_eval(key: str) -> bool:
    return key.startswith("eval_") or key.startswith("eval/")


def eval_set(key: str, keys: Sequence[str]) -> str:
    """The eval set an eval key belongs to: "" for the default one (`eval_loss`, `eval_wer`),
    `g0` for `eval_g0_loss` (transformers names each set of a dict of eval datasets so). Read from
    the run's keys alone, so a set is the same on every panel."""
    rest = key[5:]
    present = set(keys)
    if rest in present or "_" not in rest:
        return ""
    for k in present:
        if not is_eval(k) and rest.endswith("_" + k) and len(rest) > len(k) + 1:
            return rest[:-len(k) - 1]
    head = rest.rsplit("_", 1)[0]
    prefix = key[:5] + head + "_"
    if sum(1 for k in keys if k.startswith(prefix) and "_" not in k[len(prefix):]) >= 2:
        return head
    return ""


def eval_sets(keys: Sequence[str]) -> list[str]:
    """The run's eval sets in the order they were logged, the default set first."""
    found = dict.fromkeys(eval_set(k, keys) for k in keys if is_eval(k))
    return ["", *(s for s in found if s)]


def train_key(key: str, keys: Sequence[str]) -> str:
    """The train metric an eval key is the twin of (`eval_loss`, `eval_g0_loss` -> `loss`), else
    the key itself."""
    if not is_eval(key):
        return key
    name = eval_set(key, keys)
    rest = key[5 + len(name) + (1 if name else 0):]
    return rest if rest in keys else key


def series_hues(series: Sequence[tuple[int, str]], *, multi: bool, base: int,
                keys: Sequence[Sequence[str]]) -> list[int]:
    """The palette index of each (source index, key) of a panel; `keys[source]` are all the keys
    that source logged. Index i + base·k is the k-th shade of palette colour i
    (`distinct_colors`)."""
    base = max(1, base)
    if multi:
        out = []
        mine: dict[int, list[str]] = {}
        for si, key in series:
            src_keys = keys[si] if si < len(keys) else ()
            name = train_key(key, src_keys)
            metrics = mine.setdefault(si, [])
            if name not in metrics:
                metrics.append(name)
            out.append(si % base + base * metrics.index(name))
        return out
    src_keys = keys[0] if keys else ()
    trains = list(dict.fromkeys(k for _, k in series if not is_eval(k)))
    sets = eval_sets(src_keys)
    out = []
    for _, key in series:
        if not is_eval(key):
            out.append(trains.index(key))
            continue
        name = eval_set(key, src_keys)
        i = sets.index(name) if name in sets else 0
        hue = (base - 1 - i) % base
        # A panel with as many train metrics as there are colours: the eval set takes a shade.
        out.append(hue if hue >= len(trains) else hue + base * (1 + i // base))
    return out


def distinct_colors(colors: Sequence[RGB], n: int) -> list[RGB]:
    """`n` colours: the palette's, then lighter and darker shades of them, so a seventh
    series is not the first one's colour again."""
    base = list(colors) or [(200, 200, 200)]
    out = list(base)
    for amount in _SHADES:
        if len(out) >= n:
            break
        target = 255 if amount > 0 else 0
        out += [_shade(rgb, target, abs(amount)) for rgb in base]
    while len(out) < n:  # more series than shades: colours repeat, labels still differ
        out += base
    return out[:max(n, 1)]


def _shade(rgb: RGB, target: int, amount: float) -> RGB:
    """`rgb` moved `amount` of the way to white (target 255) or black (0)."""
    r, g, b = (round(c + (target - c) * amount) for c in rgb)
    return r, g, b


def panel_colors(series: Sequence[tuple[int, str]], palette: Sequence[RGB], *, multi: bool,
                 keys: Sequence[Sequence[str]]) -> list[RGB]:
    """The colour of each (source index, key) of a panel, from the palette."""
    hues = series_hues(series, multi=multi, base=len(palette), keys=keys)
    table = distinct_colors(palette, max(hues, default=0) + 1)
    return [table[h] for h in hues]
