"""A Textual driver for the benchmark: a real (not headless) driver without a terminal.

Textual reads `TEXTUAL_DRIVER=module:Class` from the environment, so the real `cockpit`
command runs unchanged with this driver. Unlike Textual's HeadlessDriver it reports
`is_headless = False`, so the app renders every frame all the way to the terminal escape
sequences it would write — and `write()` is the moment a frame leaves the app. That is
what "first frame drawn" means here.

Environment:
  COCKPIT_BENCH_SIZE        "COLSxROWS" of the pretend terminal (default 160x48)
  COCKPIT_BENCH_FIRST_FRAME a file: on the first write of a frame, write time.time() there
                            and end the process at once (the first-frame figure)
  COCKPIT_BENCH_FIRST_FRAME_ROWS  N: count only a frame written once the home screen's runs
                            table lists N runs and holds its first screen of them (the runs list
                            drawn, not its empty first frame; the table adds the rows below the
                            first screen a chunk at a time after it)
  COCKPIT_BENCH_ALL_ROWS    a file: with the two above, do not end at the first frame; write
                            time.time() there at the first frame written once the table holds
                            all N rows, and end then
Probes in the same process can set `FrameDriver.on_write` to observe every frame.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from textual.drivers.headless_driver import HeadlessDriver

# A frame of the cockpit is kilobytes of escape sequences; the sync/cursor sequences Textual
# writes around it are a few bytes. Count a write as a frame only above this size.
FRAME_MIN_BYTES = 200


def _size() -> tuple[int, int]:
    raw = os.environ.get("COCKPIT_BENCH_SIZE", "160x48")
    cols, _, rows = raw.partition("x")
    return int(cols), int(rows)


class FrameDriver(HeadlessDriver):
    on_write: Callable[[str], None] | None = None
    """Set by an in-process probe: called with every chunk the app writes."""
    frames = 0
    bytes_written = 0
    first_seen = False

    def _rows_shown(self, every: bool = False) -> bool:
        want = int(os.environ.get("COCKPIT_BENCH_FIRST_FRAME_ROWS") or 0)
        if not want:
            return True
        try:
            tables = self._app.screen.query("#runs-table")
        except Exception:  # noqa: BLE001 - no screen yet
            return False
        if not tables:
            return False
        table = tables.first()
        listed = getattr(table, "listed", table.row_count)
        # and drawn: a frame of a spinner elsewhere, written before the table's rows are, is not it
        return listed >= want and table.row_count >= (want if every else min(want, table.size.height)) \
            and getattr(table, "rows_drawn", True)

    @property
    def is_headless(self) -> bool:
        return False  # render frames to escape sequences, as on a real terminal

    def _get_terminal_size(self) -> tuple[int, int]:
        return _size()

    def write(self, data: str) -> None:
        FrameDriver.bytes_written += len(data)
        if len(data) >= FRAME_MIN_BYTES:
            FrameDriver.frames += 1
            path = os.environ.get("COCKPIT_BENCH_FIRST_FRAME")
            every = os.environ.get("COCKPIT_BENCH_ALL_ROWS")
            if path and not FrameDriver.first_seen and self._rows_shown():
                FrameDriver.first_seen = True
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(repr(time.time()))
                with open(f"{path}.cpu", "w", encoding="utf-8") as fh:  # this process's CPU time so far
                    fh.write(repr(time.process_time()))
                if not every:
                    os._exit(0)
            if every and FrameDriver.first_seen and self._rows_shown(every=True):
                with open(every, "w", encoding="utf-8") as fh:
                    fh.write(repr(time.time()))
                os._exit(0)
        hook = FrameDriver.on_write
        if hook is not None:
            hook(data)

    def flush(self) -> None:
        pass
