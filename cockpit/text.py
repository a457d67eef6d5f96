"""Text from a run made safe for a terminal: the one escaping function every printer uses.

Whatever a run wrote (metric names, warnings, phase details, findings, alert messages, run_ended
reasons, folder and trainer names, prompts, model answers) is the run's, not the cockpit's: a
model's bytes or a logged key may hold an escape sequence that sets the terminal's title, clears
the screen or colours what follows. Every control character but tab and newline (C0, DEL, the C1
range that some terminals read as CSI/OSC too) and the Unicode controls that reorder or break text
(bidi overrides and isolates, line and paragraph separators) is shown as `·`; the text itself is
kept. `cockpit watch`, `run --wait`, `runs`, `findings`, `sample`, `checkpoints`, `export`
messages and the TUI (`ui/text.py`) all print through here.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def printable(text: object) -> str:
    """`text` with control characters shown as `·` (tab and newline kept): never sent raw."""
    return _CONTROL.sub("·", text if isinstance(text, str) else str(text))


def one_line(text: object) -> str:
    """`printable`, on one line: a newline shows as `⏎ `, a tab as a space (for a cell or a
    line of `cockpit watch`)."""
    s = (text if isinstance(text, str) else str(text)).replace("\r\n", "\n")
    return _CONTROL_OR_NEWLINE.sub(lambda m: "⏎ " if m.group() == "\n" else (" " if m.group() == "\t" else "·"), s)


_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def json_safe(text: str) -> str:
    """JSON text for a terminal: the characters JSON writers leave raw inside strings (DEL, C1,
    bidi controls, line separators; C0 they escape already) written as `\\uXXXX` (the same string to
    any JSON reader)."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
