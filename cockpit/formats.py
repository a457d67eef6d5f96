"""How durations and sizes read, everywhere they are shown: the run header, the runs list, the
checkpoints table, `cockpit runs` and `cockpit watch`. Standard library only (the ground floor)."""

from __future__ import annotations

import math


def fmt_duration(seconds: float | None) -> str:
    """45s, 2m03s, 3h05m; "?" when not known."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


def short_duration(seconds: float | None) -> str:
    """At most six characters, units always shown: 45s, 2m03s, 3h05m, 4d03h, 120d."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 100 * 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s < 100 * 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    return f"{s // 86400}d"


def fmt_size(n: float) -> str:
    """Bytes in binary units: 512 B, 1.5 KB, 20.0 MB, 3.2 GB (GB is the largest)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
