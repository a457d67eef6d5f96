"""What an agent may do to a run, when the person who started `cockpit mcp` said so
(`--allow-actions`): stop-and-save, resume, and sampling a checkpoint against another.

Each goes through the code the CLI runs (`launch.plan.stop` / `resume`, `launch.sampler`), so
it is refused in the same one line (a run that is not live, one already finished, a checkpoint
still being written). Each leaves one line in the run's journal saying an agent asked for it
(a `warning` record, code `agent`, as `run_moved` says what happened to a folder): the TUI's alert
bar, `cockpit watch` and the Findings tab all show it. A stop's request file says the same
(`{"by": "agent"}`). An agent acts on a run at most once every `EVERY_S` seconds, per run.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from cockpit.agent.answers import text
from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import RunFolder

EVERY_S = 30.0
"""One action a run this often at most: an agent in a loop cannot stop, resume, stop a run."""
SAMPLE_TIMEOUT_S = 300.0
"""A sampling request's longest wait (models loaded and every answer given), then the sampler is ended."""
AGENT = "agent"
"""The code of the journal line an action leaves, and who a request file says asked."""


class Actions:
    """The actions, with each run's last action time (the rate limit) kept in this process."""

    def __init__(self, runs_dir: Path, *, every_s: float = EVERY_S) -> None:
        self.runs_dir = Path(runs_dir)
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def _run(self, ref: str) -> RunFolder:
        from cockpit.run.summaries import resolve_run

        if not isinstance(ref, str) or not ref.strip():
            raise CockpitError("no run given — give a run name (the `runs` tool lists them)")
        return resolve_run(ref.strip(), self.runs_dir)

    def _take_turn(self, run: RunFolder) -> None:
        with self._lock:
            key = str(run.path.resolve())
            now = time.monotonic()
            last = self._last.get(key)
            if last is not None and now - last < self.every_s:
                wait = self.every_s - (now - last)
                raise CockpitError(f"{run.name}: an agent acted on this run {now - last:.0f} s ago — one action a run "
                                   f"every {self.every_s:.0f} s; try again in {wait:.0f} s")
            self._last[key] = now

    @staticmethod
    def _say(run: RunFolder, what: str, client: str) -> None:
        """The journal's line: who asked for what (never raises: JournalWriter's rule)."""
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.warning(f"an agent ({client}, through `cockpit mcp`) {what}", code=AGENT))

    # -- the actions -----------------------------------------------------------------------------

    def stop_and_save(self, ref: str, *, client: str = "an MCP client") -> dict[str, Any]:
        from cockpit.launch.plan import stop
        from cockpit.run.folder import LIVE_STATES
        from cockpit.run.summaries import effective_state

        run = self._run(ref)
        state, _ = effective_state(run)
        if state not in LIVE_STATES:
            raise CockpitError(f"{run.name} is not running (state: {state}) — nothing to stop")
        self._take_turn(run)
        stop(run, save=True, by=AGENT)  # the request file says who asked; the trainer reads that it is there
        self._say(run, "asked to save a checkpoint and stop at the next step", client)
        return {"run": run.name, "asked": "stop_and_save",
                "note": "the trainer saves a checkpoint at the end of its current step, then the run ends "
                        "`stopped`; the summary tool shows its state"}

    def resume(self, ref: str, max_steps: int | None = None, *, client: str = "an MCP client") -> dict[str, Any]:
        from cockpit.launch.plan import resume

        run = self._run(ref)
        if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
            raise CockpitError(f"max_steps {max_steps!r}: give a whole number of steps ≥ 1")
        self._take_turn(run)
        notes: list[str] = []
        overrides = [f"max_steps={max_steps}"] if max_steps is not None else []
        resume(run, overrides, notes)
        self._say(run, "resumed the run" + (f" with max_steps={max_steps}" if max_steps else ""), client)
        return {"run": run.name, "asked": "resume", "notes": [text(n, 300) for n in notes],
                "attempt": run.read_status().attempt,
                "note": "a new attempt from the newest complete checkpoint; the summary tool follows it"}

    def sample(self, ref: str, *, checkpoint: str = "latest", vs: str | None = None,
               prompts: list[str] | None = None, max_new_tokens: int | None = None, temperature: float = 0.0,
               chat: bool = False, client: str = "an MCP client") -> dict[str, Any]:
        """`cockpit sample RUN --checkpoint C [--vs V] --prompt ...`: answers of one model, or two
        side by side (same seed), kept in the run's samples/ as the CLI keeps them."""
        from cockpit.launch import sampler as smp
        from cockpit.launch.script import earlier_trainers
        from cockpit.metrics import samples as kept
        from cockpit.metrics.checkpoints import list_run_checkpoints
        from cockpit.run.summaries import resolve_run_or_path

        given = [p for p in (prompts or []) if isinstance(p, str)]
        problems = smp.request_problems(max_new_tokens=max_new_tokens or 1, temperature=temperature,
                                        prompts=given[:8])
        if problems:
            raise CockpitError("; ".join(problems))
        if len(given) > 8:
            raise CockpitError(f"{len(given)} prompts: give at most 8 (each is generated by every model)")
        found = list_run_checkpoints(resolve_run_or_path(ref.strip(), self.runs_dir))
        earlier = earlier_trainers(found)
        choices = [smp.choose(found, checkpoint, "a", earlier)]
        if vs:
            choices.append(smp.choose(found, vs, "b", earlier))
        used = given or smp.run_prompts(found, 4)
        if not used:
            raise CockpitError(f"{ref}: the run logged no sample prompts — give some (prompts: [...])")
        request = smp.sample_request(found, choices, used, id=AGENT, chat=chat, max_new_tokens=max_new_tokens,
                                     temperature=temperature, seed=0)
        if found.run is not None:
            self._take_turn(found.run)
        session = kept.new_session(found.run) if found.run is not None else None
        sampler = smp.Sampler.for_run(found)
        ended: list[bool] = []

        def end() -> None:
            ended.append(True)
            sampler.kill()

        timer = threading.Timer(SAMPLE_TIMEOUT_S, end)
        timer.start()
        try:
            got = smp.collect(sampler, request, session=session)
        finally:
            timer.cancel()
            sampler.close()
        answers, notes = got.answers, got.notes
        if got.failed:
            raise CockpitError(text(got.failed, 1000))
        if ended:
            notes.append(f"the sampler was ended after {SAMPLE_TIMEOUT_S:.0f} s")
        if found.run is not None:
            labels = " vs ".join(c.label for c in choices)
            self._say(found.run, f"sampled {labels} on {len(used)} prompt{'s' if len(used) != 1 else ''}", client)
        return {"run": found.run.name if found.run else str(found.output_dir), "asked": "sample",
                "models": {c_slot: c.label for c_slot, c in zip("ab", choices, strict=False)},
                "answers": [{"prompt": text(p if isinstance(p, str) else str(p), 1000),
                             **{c_slot: text(answers.get(i, {}).get(c_slot, ""), 2000)
                                for c_slot in "ab"[:len(choices)]}} for i, p in enumerate(used)],
                "notes": [text(n, 300) for n in notes],
                "kept": str(session) if session is not None and session.exists() else None,
                "note": "greedy unless temperature > 0; both models with the same seed; kept in the run's samples/ "
                        "(the Checkpoints tab and export --completions show them)"}
