"""Runs as the user names them: one line per run for `cockpit runs` and the home screen
(without reading whole journals), and the one lookup of a run by path, name or name prefix
that every command uses."""

from __future__ import annotations

import difflib
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from cockpit.core import journal
from cockpit.core.errors import CockpitError
from cockpit.core.runfolder import LIVE_STATES, RunFolder, list_runs, read_tail

TAIL_BYTES = 256 * 1024


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class RunSummary:
    name: str
    path: str
    state: str
    trainer: str
    step: int | None
    max_steps: int | None
    eta_s: float | None
    created: float
    phase: str | None
    reason: str | None
    error: str | None = None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def to_dict(self) -> dict:
        return asdict(self)


def tail_records(path: Path, nbytes: int = TAIL_BYTES) -> list[journal.Record]:
    """The complete records in the last `nbytes` of a journal (the first, partial line dropped)."""
    data, start = read_tail(path, nbytes)
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    lines = lines[:-1]  # the last element is "" or a partial line
    out = []
    for line in lines:
        try:
            out.append(journal.decode(line))
        except journal.DecodeError:
            continue
    return out


def effective_state(run: RunFolder) -> tuple[str, str | None]:
    """The status, corrected when the supervisor died without writing its last word."""
    st = run.read_status()
    if st.live and st.supervisor_pid and st.host == os.uname().nodename \
            and not pid_alive(st.supervisor_pid):
        return "failed", "the supervisor process is gone (machine restarted or it was killed)"
    return st.state, st.reason


def summarize(run: RunFolder) -> RunSummary:
    try:
        st = run.read_status()
        state, reason = effective_state(run)
        error = None
    except CockpitError as exc:
        from cockpit.core.runfolder import Status

        st, state, reason, error = Status(), "unknown", None, str(exc)
    step = max_steps = eta = None
    phase = None
    trainer = st.trainer
    for rec in tail_records(run.events):
        if rec.kind == journal.PROGRESS:
            step, max_steps, eta = rec.step, rec.data.get("max_steps"), rec.data.get("eta_s")
        elif rec.kind == journal.METRICS and rec.step is not None:
            step = rec.step
        elif rec.kind == journal.PHASE:
            phase = rec.data.get("phase")
        elif rec.kind == journal.RUN_STARTED:
            trainer = rec.data.get("trainer") or trainer
            max_steps = rec.data.get("max_steps") or max_steps
    try:
        created = run.run_yaml.stat().st_mtime
    except OSError:
        created = 0.0
    if max_steps is not None and max_steps < 0:
        max_steps = None
    return RunSummary(run.name, str(run.path), state, trainer or "?", step, max_steps,
                      eta if state in LIVE_STATES else None, created, phase, reason, error)


def run_summaries(runs_dir: Path) -> list[RunSummary]:
    """Live runs first, then newest first."""
    rows = [summarize(r) for r in list_runs(runs_dir)]
    rows.sort(key=lambda r: (not r.live, -r.created))
    return rows


# -- finding a run by what the user typed ---------------------------------------------------


def resolve_run(ref: str, runs_dir: Path) -> RunFolder:
    """A run folder path, or a run's name (or unique name prefix) in the runs folder.

    Every command that takes a run goes through here, so they all accept the same things and a
    near miss gets the same "did you mean".
    """
    p = Path(ref).expanduser()
    if p.is_dir():
        run = RunFolder(p)
        if not run.exists():
            raise CockpitError(f"{ref}: not a run folder (no run.yaml or events.jsonl)")
        return run
    found = _find_by_name(ref, runs_dir)
    if found is None:
        raise CockpitError(f"{ref}: no such run in {runs_dir} — "
                           f"{_did_you_mean(ref, runs_dir) or '`cockpit runs` lists them'}")
    return found


def resolve_run_or_path(ref: str, runs_dir: Path) -> Path:
    """For commands that also read files and folders outside the runs dir (replay, export): an
    existing path as given, else the run of that name or prefix."""
    p = Path(ref).expanduser()
    if p.exists() or os.sep in ref or p.suffix in (".json", ".jsonl"):
        return p  # a path: the source reader names what is wrong with it
    found = _find_by_name(ref, runs_dir)
    if found is None:
        raise CockpitError(f"{ref}: no such file, folder or run in {runs_dir} — "
                           f"{_did_you_mean(ref, runs_dir) or 'give a path, or a run name from `cockpit runs`'}")
    return found.path


def _run_names(runs_dir: Path) -> list[str]:
    """Names of the run folders, newest first."""
    return [r.name for r in list_runs(runs_dir)]


def _find_by_name(ref: str, runs_dir: Path) -> RunFolder | None:
    names = _run_names(runs_dir)
    if ref in names:
        return RunFolder(runs_dir / ref)
    matches = [n for n in names if n.startswith(ref)] if ref else []
    if len(matches) == 1:
        return RunFolder(runs_dir / matches[0])
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise CockpitError(f"{ref}: matches {len(matches)} runs ({shown}) — give more of the name")
    return None


def _did_you_mean(ref: str, runs_dir: Path, n: int = 3) -> str:
    """"did you mean 'x'?" naming the closest run names, or "".

    Run names end in a timestamp, so a typo in the preset part is compared with the same
    length of each name as well as with the whole name.
    """
    scored = []
    for order, name in enumerate(_run_names(runs_dir)):
        score = max(difflib.SequenceMatcher(None, ref, name).ratio(),
                    difflib.SequenceMatcher(None, ref, name[:len(ref)]).ratio())
        if score >= 0.75:
            scored.append((-score, order, name))
    close = [name for _, _, name in sorted(scored)[:n]]
    if not close:
        return ""
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
