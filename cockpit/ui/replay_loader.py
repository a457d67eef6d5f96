"""Turn a replay path (trainer_state.json, checkpoint, output dir, run folder) into a RunData.

Runs in a worker thread: parsing a big trainer_state.json takes time. Which
file a path means is core's business (`cockpit.core.sources.open_source`);
every problem the user can cause comes back as a CockpitError naming the path.
"""

from __future__ import annotations

from cockpit.core.sources import Source, open_source
from cockpit.ui.rundata import RunData

LABEL_WIDTH = 28


def clip(text: str, width: int = LABEL_WIDTH) -> str:
    """Legends have little room: keep both ends of a long run name."""
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width // 2):]


def load_replay(path: str) -> RunData:
    return from_source(open_source(path))


def from_source(source: Source) -> RunData:
    """Journals replay record by record (header, completions, alerts, system);
    trainer_state.json takes the columnar fast path into the store."""
    data = RunData(clip(source.label or str(source.path)))
    if source.is_journal:
        data.apply(source.records)
    else:
        data.store = source.load_store()
        data.log_rows = source.load_log_rows()
        data.completions = source.load_completions()
        data.step = data.store.last_step
        data.max_steps = source.max_steps or data.store.max_steps
        data.epoch = data.store.epoch
        data.state = "replay"
        data.version += 1
    data.notes.extend(str(w) for w in source.warnings)
    return data
