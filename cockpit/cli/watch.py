"""`cockpit watch`: a run followed in a plain terminal, for pipes, logs and scripts.

It tails the same journal the TUI reads, so what it prints is what the run
recorded; it never parses the trainer's stdout.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from cockpit.errors import CockpitError
from cockpit.formats import fmt_duration
from cockpit.metrics.completions import CompletionsLibrary
from cockpit.metrics.follow import POLL_S, RunFollower
from cockpit.run import journal
from cockpit.run.folder import LIVE_STATES, RunFolder
from cockpit.run.summaries import effective_state, fmt_value
from cockpit.text import one_line

# Shown first when present; then whatever else the trainer logged, up to a few.
PREFERRED = ("loss", "reward", "rewards/margins", "rewards/accuracies", "objective/rlhf_reward",
             "objective/kl", "kl", "entropy", "mean_token_accuracy", "accuracy", "learning_rate",
             "grad_norm")


def describe(rec: journal.Record, max_keys: int = 6) -> str | None:
    """One line for a record, or None for records not worth a line of their own. Everything in it
    that came from the run is shown through `text.one_line`: no escape sequence reaches the
    terminal, and no newline splits the line."""
    line = _describe(rec, max_keys)
    return None if line is None else one_line(line)


def _describe(rec: journal.Record, max_keys: int) -> str | None:
    d = rec.data
    if rec.kind == journal.RUN_STARTED:
        v = d.get("versions") or {}
        return (f"started {d.get('trainer')} on {d.get('device')} (world size {d.get('world_size')}, "
                f"trl {v.get('trl', '?')}, transformers {v.get('transformers', '?')})"
                + (f", resumed from {d['resumed_from']}" if d.get("resumed_from") else ""))
    if rec.kind == journal.PHASE:
        return f"phase: {d.get('phase')}" + (f" ({d['detail']})" if d.get("detail") else "")
    if rec.kind in (journal.METRICS, journal.EVAL):
        keys = [k for k in PREFERRED if k in d] + sorted(k for k in d if k not in PREFERRED
                                                           and k not in ("epoch", "summary"))
        parts = [f"{k}={fmt_value(d[k])}" for k in keys[:max_keys]]
        label = "eval" if rec.kind == journal.EVAL else ("summary" if d.get("summary") else "step")
        return f"{label} {rec.step}: " + " ".join(parts)
    if rec.kind == journal.ALERT:
        done = ", ".join(f"{a.get('action')}: {'ok' if a.get('ok') else a.get('detail')}"
                         for a in d.get("actions") or [])
        return f"alert: {d.get('message')} [{d.get('rule')}]" + (f" — {done}" if done else "")
    if rec.kind == journal.COMPLETIONS:
        rows = d.get("rows") or []
        if not rows:
            return None
        r = rows[-1]
        rewards = " ".join(f"{k}={fmt_value(v)}" for k, v in (r.get("rewards") or {}).items())
        comp = one_line(r.get("completion", ""))[:80]
        prompt = one_line(r.get("prompt", ""))[-40:]
        return f"sample @{rec.step} ({len(rows)} rows): “{prompt}” → “{comp}” {rewards}".rstrip()
    if rec.kind == journal.FINDING:
        where = f"steps {d['steps'][0]}–{d['steps'][1]}" if isinstance(d.get("steps"), list) and len(d["steps"]) == 2 \
            else "whole run"
        return f"finding: [{d.get('severity')}] {d.get('kind')} ({where}): {d.get('summary')}" \
            + (f" — fix: {d['fix']}" if d.get("fix") else "")
    if rec.kind == journal.CHECKPOINT:
        return f"checkpoint {rec.step}: {d.get('path')}"
    if rec.kind == journal.WARNING:
        return f"warning: {d.get('message')}" + (f" — {d['fix']}" if d.get("fix") else "")
    if rec.kind == journal.STOP_REQUESTED:
        return f"stop requested at step {rec.step}: saving a checkpoint"
    if rec.kind == journal.RUN_ENDED:
        line = f"ended: {d.get('state')}"
        if d.get("reason"):
            line += f" — {d['reason']}"
        if d.get("fix"):
            line += f" (fix: {d['fix']})"
        return line
    return None


def watch(run: RunFolder, out: TextIO = sys.stdout, *, poll_s: float = POLL_S,
          follow: bool = True, from_attempt: int = 1) -> str:
    """Print the run until its newest attempt ends; returns that attempt's final state.

    The journal comes through the one follower (`metrics.follow.RunFollower`), polled every
    `poll_s`. A resumed run's journal holds several attempts, each closed by a `run_ended`
    line; anything after a `run_ended` belongs to the next attempt. The watch ends at a
    `run_ended` only when it closes the attempt status.json counts as the current one, so a
    resumed run is followed to its own end. Attempts before `from_attempt` are read (to count
    them) but not printed: `cockpit resume --wait` shows the attempt it started.
    """
    follower = RunFollower(run, poll_s=poll_s)
    tailer = follower.tailer
    library: CompletionsLibrary | None = None
    last_progress = 0.0
    ended: str | None = None  # the newest attempt in the journal ended so
    ends_seen = 0
    idle_since = time.monotonic()
    said: set[str] = set()
    before = follower.offsets()
    for update in follower.updates(lambda: False, idle=True):
        if update.problem:  # status.json cannot be read: said as `cockpit` says any CockpitError
            raise CockpitError(update.problem)
        records = update.records
        for problem in tailer.problems():
            key = problem.split(" ", 1)[-1] if problem[:1].isdigit() else problem  # say each kind once
            if key not in said:
                said.add(key)
                print(f"cockpit: {run.events.name}: {one_line(problem)}", file=sys.stderr, flush=True)
        for rec in records:
            if rec.kind not in (journal.RUN_ENDED, journal.ALERT):  # a run_ended notice's line may follow it
                ended = None
            if ends_seen + 1 < from_attempt:
                ends_seen += rec.kind == journal.RUN_ENDED
                continue
            if rec.kind == journal.PROGRESS:
                now = time.monotonic()
                if now - last_progress >= 5.0:
                    last_progress = now
                    d = rec.data
                    total = d.get("max_steps")
                    rate = d.get("steps_per_s")
                    print(f"progress: step {rec.step}/{total or '?'}"
                          + (f", {rate:.2f} steps/s" if rate else "")
                          + (f", ETA {fmt_duration(d.get('eta_s'))}" if d.get("eta_s") is not None else ""),
                          file=out, flush=True)
                continue
            if rec.kind == journal.COMPLETIONS_REF and rec.step is not None:  # the rows are in the store
                library = library or CompletionsLibrary(run.path)
                library.refresh()
                rec = journal.completions(rec.step, library.rows(rec.step), source=str(rec.data.get("source")))
            line = describe(rec)
            if line:
                print(line, file=out, flush=True)
            if rec.kind == journal.RUN_ENDED:
                ends_seen += 1
                ended = str(rec.data.get("state"))
        if records:
            idle_since = time.monotonic()
        caught_up = follower.caught_up(before)
        before = follower.offsets()
        if not caught_up:  # more may be there already (one poll reads at most 64 MB): read on first
            continue
        # status.json's attempt counter is raised by `resume` before the new supervisor starts,
        # so an end line for an older attempt never reads as the end of the run.
        if ended is not None and ends_seen >= run.read_status().attempt:
            return ended
        state = follower.state or effective_state(run)[0]
        if not follow:
            return state
        if state not in LIVE_STATES and time.monotonic() - idle_since > 2.0:
            # The newest attempt ended without a run_ended line (its supervisor was killed).
            reason = effective_state(run)[1]
            print(one_line(f"ended: {state} — {reason or 'no final journal line'}"), file=out, flush=True)
            return state
    raise AssertionError("the follower stops only when asked")
