"""Turn a replay path (trainer_state.json, checkpoint, output dir, run folder) into a RunData.

Runs in a worker thread: parsing a big trainer_state.json takes time. Every
problem the user can cause comes back as a CockpitError naming the path.
"""

from __future__ import annotations

from pathlib import Path

from cockpit.core.errors import CockpitError
from cockpit.ui.rundata import RunData, load_journal


def short_label(path: Path) -> str:
    """A name for legends: the run/output folder, with the checkpoint when there is one."""
    p = path.resolve() if path.exists() else path
    parts = [x for x in p.parts if x not in ("/", "")]
    if p.name == "trainer_state.json" or p.name == "events.jsonl":
        parts = parts[:-1]
    if parts and parts[-1] == "output":
        parts = parts[:-1]
    if parts and parts[-1].startswith("checkpoint-") and len(parts) > 1:
        base = parts[-2] if parts[-2] != "output" else (parts[-3] if len(parts) > 2 else parts[-2])
        return _clip(f"{base}/{parts[-1]}")
    name = parts[-1] if parts else str(path)
    if p.suffix == ".json" and p.name != "trainer_state.json":
        name = p.stem
    return _clip(name)


def _clip(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width // 2):]


def load_replay(path: str) -> RunData:
    """A RunData for one replay path, through core.sources when it is there."""
    p = Path(path).expanduser()
    try:
        from cockpit.core import sources
    except ImportError:
        sources = None
    if sources is not None and hasattr(sources, "open_source"):
        return _from_core_source(sources.open_source(str(p)), p)
    return _fallback(p)


def _from_core_source(source: object, p: Path) -> RunData:
    label = str(getattr(source, "label", "") or short_label(p))
    label = _clip(label)
    records_fn = getattr(source, "records", None) or getattr(source, "load_records", None)
    events = getattr(source, "events", None)
    if events is not None and Path(events).is_file():
        data, _ = load_journal(Path(events), label)
        return data
    if callable(records_fn):
        data = RunData(label)
        data.apply(records_fn())
    else:
        data = RunData(label)
        data.store = source.load_store()  # type: ignore[attr-defined]
        data.step = data.store.last_step
        data.max_steps = data.store.max_steps
        data.epoch = data.store.epoch
    for w in getattr(source, "warnings", None) or []:
        data.notes.append(str(w))
    data.state = "replay"
    return data


def _fallback(p: Path) -> RunData:
    """Used until core.sources exists: journal when there is one, else trainer_state.json."""
    if not p.exists():
        raise CockpitError(f"{p}: no such file or folder — check the path")
    if p.is_dir() and (p / "events.jsonl").is_file():
        data, _ = load_journal(p / "events.jsonl", short_label(p))
        return data
    if p.is_file() and p.suffix == ".jsonl":
        data, _ = load_journal(p, short_label(p))
        return data
    state = _find_trainer_state(p)
    from cockpit.core.trainer_state import parse_trainer_state

    try:
        raw = state.read_bytes()
    except OSError as exc:
        raise CockpitError(f"{state}: cannot read ({exc.strerror})") from None
    parsed = parse_trainer_state(raw, source=str(state))
    data = RunData(short_label(state))
    data.apply(parsed.records)
    if parsed.max_steps:
        data.max_steps = parsed.max_steps
        data.store.max_steps = parsed.max_steps
    data.notes.extend(parsed.warnings)
    data.state = "replay"
    return data


def _find_trainer_state(p: Path) -> Path:
    if p.is_file():
        return p
    if (p / "trainer_state.json").is_file():
        return p / "trainer_state.json"
    from cockpit.core.runfolder import list_checkpoints

    for base in (p, p / "output"):
        ckpts = list_checkpoints(base)
        for ckpt in reversed(ckpts):
            if (ckpt / "trainer_state.json").is_file():
                return ckpt / "trainer_state.json"
    raise CockpitError(f"{p}: no trainer_state.json, checkpoint or events.jsonl in it — "
                       "give a run folder, an output dir, a checkpoint or a trainer_state.json")
