"""The read-only tools' answers, from the CLI's own read paths.

A run is found as every command finds one (`summaries.resolve_run_or_path`: a folder, a name or
a unique prefix, or a trainer_state.json / checkpoint / output dir). What is read is kept between
calls: a run folder's journal is followed (`rundata.load_journal`'s tailer, polled at each call,
so a live run is read where it grew and a 100k-step run is parsed once), any other path is read
again when its files change. The runs list is `RunsIndex`'s (the home screen's), the findings are
`findings.report`'s (`cockpit findings --json`), the checkpoints `metrics.checkpoints`'
(`cockpit checkpoints --json`), the completions the `CompletionsLibrary` (`export --completions`),
the series the metric store's, downsampled with MinMaxLTTB (`plotmath.downsample`: spikes kept).

Each method returns a plain dict, bounded by its own limits (and by `answers.bound` after it).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cockpit.agent.answers import clean, limited, number, text
from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.run.section import cockpit_section

MAX_RUNS = 100
MAX_KEYS = 300
MAX_SERIES = 8
MAX_POINTS = 1000
MAX_ROWS = 50
SCAN_STEPS = 400
"""Completions steps a search or a best/worst over a range reads at most (newest first)."""
SCAN_S = 0.15
"""…and for at most this long: an answer comes back, saying how far it looked."""
LAST_VALUES = 8
KEPT_RUNS = 8
"""Runs whose RunData a reader keeps between calls, the most recently asked (a 100k-step run's is
tens of MB): one asked after it fell out is read again."""
JUDGE_EVERY_S = 5.0
"""A growing run is judged again at most this often (the supervisor's live judge: every 5 s)."""

CONFIG_KEYS = (
    "model_name_or_path", "dataset_name", "dataset_config", "dataset_train_split", "learning_rate",
    "lr_scheduler_type", "warmup_ratio", "warmup_steps", "max_steps", "num_train_epochs",
    "per_device_train_batch_size", "gradient_accumulation_steps", "max_length", "max_seq_length", "packing",
    "beta", "loss_type", "num_generations", "max_completion_length", "max_prompt_length", "temperature",
    "reward_funcs", "reward_weights", "use_peft", "lora_r", "lora_alpha", "lora_target_modules", "bf16", "fp16",
    "gradient_checkpointing", "seed", "eval_strategy", "eval_steps", "save_steps", "logging_steps", "output_dir",
)
"""The keys of run.yaml a summary shows: what an agent needs to reason about a run. The rest is in
the run folder's run.yaml, for a person."""
SECRET_PREFIX = "secret:"


def _age(t: float | None, now: float) -> float | None:
    return round(max(0.0, now - t), 1) if t else None


@dataclass
class _Followed:
    data: RunData
    tailer: Any
    stamp: tuple[int, int] | None


class Reader:
    """The tools' answers over one runs folder, with what was read kept between calls."""

    def __init__(self, runs_dir: Path) -> None:
        from cockpit.run.summaries import RunsIndex

        self.runs_dir = Path(runs_dir)
        self._index = RunsIndex(self.runs_dir)
        self._followed: OrderedDict[str, _Followed] = OrderedDict()
        self._files: OrderedDict[str, tuple[tuple, RunData]] = OrderedDict()
        self._judged: OrderedDict[str, tuple[RunData, tuple, float, Any]] = OrderedDict()
        self._finding_counts: dict[str, tuple[int, int, int]] = {}

    # -- finding what was asked for ------------------------------------------------------------

    def path_of(self, ref: str) -> Path:
        """What `ref` names, as `cockpit replay`/`findings` take it; one line when nothing."""
        from cockpit.metrics.sources import check_path
        from cockpit.run.summaries import resolve_run_or_path

        if not isinstance(ref, str) or not ref.strip():
            raise CockpitError("no run given — give a run name (the `runs` tool lists them), a run folder or a "
                               "trainer_state.json path")
        return check_path(resolve_run_or_path(ref.strip(), self.runs_dir)).resolve()

    def data(self, ref: str) -> tuple[Path, RunData]:
        """The run's RunData as it is now: a run folder's journal followed (only what it gained since
        the last call is read), any other path read again when its files changed."""
        p = self.path_of(ref)
        events = p / "events.jsonl"
        if p.is_dir() and events.is_file():
            data = self._follow(p, events)
            if data.store.keys() or not (p / "output").is_dir():
                return p, data
        return p, self._file(p)

    def _follow(self, p: Path, events: Path) -> RunData:
        key = str(p)
        try:
            st = events.stat()
            stamp: tuple[int, int] | None = (st.st_ino, st.st_dev)
        except OSError:
            stamp = None
        got = self._followed.get(key)
        if got is None or got.stamp != stamp:
            from cockpit.metrics.rundata import load_journal

            data, tailer = load_journal(events, p.name)
            self._followed[key] = got = _Followed(data, tailer, stamp)
            _keep_newest(self._followed)
            return data
        self._followed.move_to_end(key)
        while True:
            before = got.tailer.offset
            batch = got.tailer.poll()
            if batch:
                got.data.apply(batch)
            if got.tailer.offset == before:
                break
        return got.data

    def _file(self, p: Path) -> RunData:
        from cockpit.findings.report import load

        stamp = _tree_stamp(p)
        got = self._files.get(str(p))
        if got is not None and got[0] == stamp:
            self._files.move_to_end(str(p))
            return got[1]
        data = load(p)
        self._files[str(p)] = (stamp, data)
        _keep_newest(self._files)
        return data

    # -- runs ------------------------------------------------------------------------------------

    def runs(self, *, archived: bool = False, limit: int = 30) -> dict[str, Any]:
        from cockpit.run.manage import archive_dir
        from cockpit.run.summaries import run_summaries

        limit = max(1, min(int(limit), MAX_RUNS))
        where = archive_dir(self.runs_dir) if archived else self.runs_dir
        rows = run_summaries(where) if archived else self._index.summaries()
        now = time.time()
        cut: list[str] = []
        out = []
        for r in limited(rows, limit, "runs", cut):
            events = Path(r.path) / "events.jsonl"
            out.append({
                "name": r.name, **({"path": r.path} if archived else {}), "state": r.state_label,
                "reason": r.reason, "trainer": r.trainer,
                "step": r.step, "max_steps": r.max_steps,
                "progress": round(r.step / r.max_steps, 4) if r.step is not None and r.max_steps else None,
                "age_s": _age(r.created, now), "eta_s": r.eta_s, "phase": r.phase,
                "journal_quiet_s": _quiet(events, now),
                "last": _last_values(events), "findings": self._count_findings(events),
                **({"error": r.error} if r.error else {}),
                **({"journal": r.journal_note} if r.journal_note else {}),
            })
        if not where.is_dir():
            return {"runs_dir": str(where), "count": 0, "runs": [],
                    "note": f"no runs folder at {where} — give `cockpit mcp` the right --runs-dir (or "
                            "$COCKPIT_RUNS_DIR) in the agent's config; a run can still be read by its folder's path"}
        return {"runs_dir": str(where), "count": len(rows), "runs": out,
                "note": "live runs first, then newest first; `findings` counts what the live judge recorded "
                        "(the findings tool judges the data now); journal_quiet_s: seconds since the run last "
                        "wrote its journal" + ("; an archived run is asked for by its path" if archived else ""),
                "cut": cut}

    def _count_findings(self, events: Path) -> int | None:
        """`finding` records in a journal, counted with a byte search, only over what it gained
        since the last count."""
        try:
            st = events.stat()
        except OSError:
            return None
        key = str(events)
        ino, offset, count = self._finding_counts.get(key, (st.st_ino, 0, 0))
        if ino != st.st_ino or st.st_size < offset:
            offset, count = 0, 0
        if st.st_size > offset:
            from cockpit.files import open_regular

            marker = b'"kind":"finding"'
            try:
                with open_regular(events) as fh:
                    fh.seek(offset)
                    blob = fh.read(st.st_size - offset)
            except OSError:
                return None
            end = blob.rfind(b"\n") + 1  # a partial last line is counted when it is whole
            count += blob.count(marker, 0, end)
            offset += end
        self._finding_counts[key] = (st.st_ino, offset, count)
        return count

    # -- one run -----------------------------------------------------------------------------------

    def summary(self, ref: str) -> dict[str, Any]:
        from cockpit.metrics.panels import best_direction

        p, data = self.data(ref)
        run = RunFolder(p) if p.is_dir() and RunFolder(p).exists() else None
        now = time.time()
        state, reason = data.state, None
        if run is not None:
            from cockpit.run.summaries import effective_state

            try:
                state, reason = effective_state(run)
            except CockpitError as exc:
                state, reason = "unknown", str(exc)
        store = data.store
        step, max_steps = data.step, data.max_steps
        best_eval = {}
        for key in store.keys():
            direction = best_direction(key)
            if not key.startswith("eval_") or direction is None:
                continue
            steps, values = store.series(key, copy=False)
            finite = np.isfinite(values)
            if not finite.any():
                continue
            i = int(np.nanargmin(np.where(finite, values, np.nan)) if direction == "min"
                    else np.nanargmax(np.where(finite, values, np.nan)))
            best_eval[key] = {"best": float(values[i]), "at_step": int(steps[i]), "direction": direction,
                              "last": number(float(values[-1])), "last_step": int(steps[-1])}
        if store.best is not None:
            best_eval["trainer_state_best_metric"] = {"best": store.best[0], "at_step": store.best[1]}
        alerts = [{"level": a.level, "message": a.message, "step": a.step, **({"fix": a.fix} if a.fix else {})}
                  for a in list(data.alerts)[-6:]]
        recorded = [rec.data.get("kind") for rec in data.findings]
        return {
            "run": data.label, "path": str(p), "trainer": data.trainer, "state": state, "reason": reason,
            "phase": data.phase, "journal_quiet_s": _quiet(p / "events.jsonl", now) if run is not None else None,
            "progress": {"step": step, "max_steps": max_steps,
                         "fraction": round(step / max_steps, 4) if step is not None and max_steps else None,
                         "epoch": data.epoch, "steps_per_s": data.steps_per_s,
                         "eta_s": round(eta, 1) if (eta := data.eta_now(now)) is not None else None,
                         "running_for_s": _age(data.started, now) if state in ("running", "stopping") else None},
            "config": self._config(run) if run is not None else None,
            "last": _store_last(store, LAST_VALUES),
            "best_eval": best_eval or None,
            "recorded_findings": {"count": len(recorded), "kinds": sorted({str(k) for k in recorded})},
            "checkpoints": {"count": len(data.checkpoints),
                            "newest": data.checkpoints[-1][1] if data.checkpoints else None},
            "alerts": alerts, "notes": data.notes[-5:],
        }

    @staticmethod
    def _config(run: RunFolder) -> dict[str, Any]:
        """The config that matters, read through run.yaml's one door (and the typed `cockpit:`
        section's, `run/section`); secrets stay references and environment values never leave
        (their names do)."""

        cfg = run.config()
        out: dict[str, Any] = {"trainer": cfg.get("trainer")}
        for key in CONFIG_KEYS:
            if key in cfg:
                out[key] = _no_secret(cfg[key])
        section = cockpit_section(run)
        if section.script is not None:
            out["script"] = {"command": _no_secret(list(section.script.command)), "cwd": section.script.cwd}
        if section.env:
            out["env_names"] = sorted(section.env)  # the names only: values never leave
        if section.launcher and section.launcher.get("kind"):
            out["launcher"] = section.launcher.get("kind")
        return out

    # -- metrics -----------------------------------------------------------------------------------

    def metrics(self, ref: str, keys: list[str] | None = None, first: int | None = None,
                last: int | None = None, points: int = 200) -> dict[str, Any]:
        _, data = self.data(ref)
        store = data.store
        cut: list[str] = []
        if not keys:
            listed = []
            for key in limited(store.keys(), MAX_KEYS, "keys", cut):
                _steps, values = store.series(key, copy=False)
                finite = values[np.isfinite(values)]
                listed.append({"key": key, "points": len(values), "last": number(store.latest(key)),
                               "last_step": store.latest_step(key),
                               "min": float(finite.min()) if len(finite) else None,
                               "max": float(finite.max()) if len(finite) else None})
            return {"run": data.label, "last_step": store.last_step, "keys": listed,
                    "note": "give keys (and first/last steps) for a series", "cut": cut}
        points = max(3, min(int(points), MAX_POINTS))
        series = {}
        known = set(store.keys())
        missing = [k for k in keys if k not in known]
        for key in limited([k for k in keys if k in known], MAX_SERIES, "series", cut):
            steps, values = store.series(key, copy=False)
            lo = int(np.searchsorted(steps, first, "left")) if first is not None else 0
            hi = int(np.searchsorted(steps, last, "right")) if last is not None else len(steps)
            xs, ys = steps[lo:hi], values[lo:hi]
            finite = np.isfinite(ys)
            bad_steps = xs[~finite]
            from cockpit.metrics.plotmath import downsample

            dx, dy = downsample(xs, ys, points, sorted_x=True)
            fy = ys[finite]
            series[key] = {
                "count": len(ys), "first_step": int(xs[0]) if len(xs) else None,
                "last_step": int(xs[-1]) if len(xs) else None,
                "min": float(fy.min()) if len(fy) else None, "max": float(fy.max()) if len(fy) else None,
                "mean": float(fy.mean()) if len(fy) else None,
                "last": number(float(ys[-1])) if len(ys) else None,
                "nonfinite": {"count": len(bad_steps), "first_steps": [int(s) for s in bad_steps[:10]]},
                "downsampled": len(dx) < int(finite.sum()),
                "points": [[int(s), float(v)] for s, v in zip(dx.tolist(), dy.tolist(), strict=True)],
            }
        out: dict[str, Any] = {"run": data.label, "range": [first, last], "series": series,
                               "note": "points: [step, value], at most `points` a series, MinMaxLTTB (spikes kept); "
                                       "NaN/inf points are counted in nonfinite, not drawn", "cut": cut}
        if missing:
            out["unknown_keys"] = missing[:20]
            out["known_keys"] = sorted(known)[:60]
        return out

    # -- findings ----------------------------------------------------------------------------------

    def findings(self, ref: str, evidence_rows: int = 3) -> dict[str, Any]:
        """`cockpit findings --json`: the recorded findings and what the judge finds now, with their
        evidence and what was checked."""
        from cockpit.findings import report

        p, data = self.data(ref)
        trainers = [data] if data.segment == 0 else report.load_trainers(p)
        out_findings: list[dict[str, Any]] = []
        checked: dict[str, Any] = {}
        several = len(trainers) > 1
        for i, one in enumerate(trainers):
            judged = self._judge(p, one, i)
            for f in judged.findings:
                d = _finding(f.to_record().data, evidence_rows)
                if several:
                    d["trainer"] = i + 1
                out_findings.append(d)
            checked = judged.to_json()
            checked["quiet"] = [{"kind": k, "note": n} for k, n in judged.quiet_notes()]
            checked["checks"] = [c for c in checked["checks"] if c["ran"] and c["fired"]] + \
                [c for c in checked["checks"] if not (c["ran"] and c["fired"])]
        cut: list[str] = []
        return {"run": report.run_label(trainers[0]), "findings": limited(out_findings, 30, "findings", cut),
                "checked": checked, "notes": data.notes[-5:], "cut": cut,
                "note": "steps are [first, last]; evidence: metric points [step, value], completions rows, prompts, "
                        "files; `checked` says every rule run, the number that kept each quiet rule quiet, and the "
                        "rules this run logged nothing for"}

    def _judge(self, p: Path, data: RunData, i: int) -> Any:
        """The judge's word on `data`, again only when it changed, and for a run that keeps growing
        at most every JUDGE_EVERY_S (as the supervisor's live judge): `checked.steps` says up to
        which step it judged."""
        from cockpit.findings import report

        key = f"{p}#{i}"
        stamp = (data.version, data.store.version, len(data.library) if data.library is not None else 0)
        got = self._judged.get(key)
        now = time.monotonic()
        if got is not None and got[0] is data and (got[1] == stamp or now - got[2] < JUDGE_EVERY_S):
            self._judged.move_to_end(key)
            return got[3]
        judged = report.judged_run(data)
        self._judged[key] = (data, stamp, now, judged)
        _keep_newest(self._judged)
        return judged

    # -- completions -------------------------------------------------------------------------------

    def completions(self, ref: str, *, step: int | None = None, steps: str | None = None, order: str = "logged",
                    reward: str | None = None, search: str | None = None, limit: int = 6,
                    chars: int = 600) -> dict[str, Any]:
        from cockpit.metrics.export import parse_steps

        if order not in ("logged", "best", "worst"):
            raise CockpitError(f"order {order!r}: give logged, best or worst")
        limit = max(1, min(int(limit), MAX_ROWS))
        chars = max(40, min(int(chars), 4000))
        _, data = self.data(ref)
        lib = data.library
        if lib is None:
            return {"run": data.label, "steps": 0, "rows": [],
                    "note": "this run logged no completions (GRPO: log_completions: true; SFT/DPO: "
                            "cockpit.completions.every_steps)"}
        lib.refresh()
        logged = lib.steps()
        if not logged:
            return {"run": data.label, "steps": 0, "rows": [], "note": "no completions logged yet"}
        if step is not None:
            if step not in set(logged):
                near = sorted(logged, key=lambda s: abs(s - step))[:5]
                raise CockpitError(f"no completions at step {step} — the nearest logged steps: "
                                   f"{', '.join(map(str, sorted(near)))}")
            wanted = [step]
        elif steps:
            a, b = parse_steps(steps)
            wanted = [s for s in logged if (a is None or s >= a) and (b is None or s <= b)]
        elif search:
            wanted = list(logged)
        else:
            wanted = [logged[-1]]
        cut: list[str] = []
        needle = search.lower() if search else None
        rows: list[dict[str, Any]] = []
        names: dict[str, None] = {}
        read = 0
        started = time.perf_counter()
        for s in reversed(wanted):
            if read >= SCAN_STEPS or (read and time.perf_counter() - started > SCAN_S):
                cut.append(f"steps: read the newest {read} of {len(wanted)} asked for (give steps A:B to look "
                           "further back)")
                break
            read += 1
            for row in lib.peek(s):
                names.update(dict.fromkeys(row["rewards"]))
                if needle and needle not in (row["prompt"] + "\n" + row["completion"]).lower():
                    continue
                rows.append(row)
            if order == "logged" and len(rows) >= limit and (needle or step is None):
                if read < len(wanted):
                    cut.append(f"steps: stopped after {read} steps with {limit} rows found")
                break
        if reward is not None and reward not in names:
            raise CockpitError(f"reward {reward!r}: not logged — this run's reward functions: "
                               f"{', '.join(names) or 'none'}")
        per_reward = _per_reward(rows, list(names))
        if order != "logged":
            def score(row: dict[str, Any]) -> float:
                vals = [row["rewards"].get(reward)] if reward else list(row["rewards"].values())
                vals = [v for v in vals if isinstance(v, float) and math.isfinite(v)]
                return sum(vals) if vals else -math.inf if order == "best" else math.inf

            rows.sort(key=score, reverse=(order == "best"))
        shown = limited(rows, limit, "rows", cut)
        return {"run": data.label, "logged_steps": {"count": len(logged), "first": logged[0], "last": logged[-1]},
                "steps_read": read, "matched": len(rows), "order": order,
                "score": (f"the {reward} reward" if reward else "the sum of the reward functions' values")
                if order != "logged" else None,
                "reward_functions": list(names), "per_reward": per_reward,
                "rows": [_row(r, chars) for r in shown], "cut": cut}

    # -- checkpoints -------------------------------------------------------------------------------

    def checkpoints(self, ref: str) -> dict[str, Any]:
        from cockpit.launch import sampler as smp
        from cockpit.launch.script import earlier_trainers
        from cockpit.metrics.checkpoints import list_run_checkpoints

        found = list_run_checkpoints(self.path_of(ref))
        cut: list[str] = []
        doc = found.to_dict()
        doc["checkpoints"] = limited(doc["checkpoints"][::-1], 40, "checkpoints (newest first)", cut)
        earlier = []
        for i, one in enumerate(earlier_trainers(found)):
            d = one.to_dict()
            d["checkpoints"] = [{**c.to_dict(), "key": smp.trainer_key(i + 1, c.name)} for c in one.checkpoints][-10:]
            earlier.append(d)
        doc["earlier_trainers"] = earlier
        doc["key_metric"], doc["eval_metric"] = found.key_metric, found.eval_metric
        doc["cut"] = cut
        doc["note"] = ("newest first; sizes in bytes; key_value/eval_value: the run's key and eval metric at that "
                       "step; `complete`: trainer_state.json and whole weights (only complete ones load)")
        return doc

    # -- several runs ------------------------------------------------------------------------------

    def compare(self, refs: list[str], keys: list[str] | None = None) -> dict[str, Any]:
        from cockpit.metrics.panels import best_direction

        if not refs or len(refs) < 2:
            raise CockpitError("compare takes two runs or more — give their names (the `runs` tool lists them)")
        cut: list[str] = []
        refs = limited(list(refs), 6, "runs", cut)
        loaded = [(ref, *self.data(ref)) for ref in refs]
        common = set.intersection(*(set(d.store.keys()) for _, _, d in loaded))
        if keys:
            chosen = [k for k in keys if any(k in d.store.keys() for _, _, d in loaded)]
        else:
            from cockpit.run.summaries import HEADLINE_KEYS

            chosen = [k for k in (*HEADLINE_KEYS, "eval_loss", "grad_norm", "learning_rate", "kl", "entropy",
                                  "mean_token_accuracy", "rewards/margins", "rewards/accuracies") if k in common]
            chosen += sorted(k for k in common if k.startswith("eval_") and k not in chosen)
        chosen = limited(list(dict.fromkeys(chosen)), 12, "keys", cut)
        shared_last = min((d.store.last_step or 0) for _, _, d in loaded)
        runs, configs = [], []
        for ref, p, d in loaded:
            run = RunFolder(p) if p.is_dir() and RunFolder(p).exists() else None
            cfg = self._config(run) if run is not None else {}
            configs.append(cfg)
            vals: dict[str, Any] = {}
            for key in chosen:
                steps, values = d.store.series(key, copy=False)
                if not len(values):
                    continue
                finite = np.isfinite(values)
                direction = best_direction(key)
                entry: dict[str, Any] = {"last": number(float(values[-1])), "last_step": int(steps[-1]),
                                         "points": len(values)}
                if finite.any():
                    masked = np.where(finite, values, np.nan)
                    entry["min"], entry["max"] = float(np.nanmin(masked)), float(np.nanmax(masked))
                    if direction:
                        i = int(np.nanargmin(masked) if direction == "min" else np.nanargmax(masked))
                        entry["best"], entry["best_step"] = float(values[i]), int(steps[i])
                at = int(np.searchsorted(steps, shared_last, "right")) - 1
                if at >= 0:
                    entry["at_shared_step"] = number(float(values[at]))
                vals[key] = entry
            runs.append({"ref": ref, "run": d.label, "trainer": d.trainer, "step": d.step, "max_steps": d.max_steps,
                         "state": d.state, "metrics": vals, "recorded_findings": len(d.findings)})
        differ = {}
        for key in sorted({k for c in configs for k in c}):
            seen = [c.get(key) for c in configs]
            if any(s != seen[0] for s in seen[1:]):
                differ[key] = seen
        return {"runs": runs, "shared_step": shared_last, "config_differs": differ,
                "note": "at_shared_step: each run's value at the last step every run reached (the newest point at or "
                        "before it); best by each metric's direction (loss: min, reward: max)", "cut": cut}


# -- helpers ----------------------------------------------------------------------------------------


def _keep_newest(cache: OrderedDict[str, Any]) -> None:
    """The KEPT_RUNS most recent entries of a cache kept in the order asked (newest last)."""
    while len(cache) > KEPT_RUNS:
        cache.popitem(last=False)


def _quiet(events: Path, now: float) -> float | None:
    """Seconds since the journal was last written: a live run quiet for long may be stuck (the
    findings tool says whether the supervisor's doctor saw a hang)."""
    try:
        return _age(events.stat().st_mtime, now)
    except OSError:
        return None


def _tree_stamp(p: Path) -> tuple:
    """What a non-run path's reading depends on, from stat alone."""
    out: list[Any] = []
    cands = [p] if p.is_file() else [p, p / "trainer_state.json", p / "output", p / "completions"]
    for c in cands:
        try:
            st = c.stat()
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _no_secret(v: Any) -> Any:
    if isinstance(v, str) and v.startswith(SECRET_PREFIX):
        return "(a secret, kept out of the run folder)"
    if isinstance(v, list):
        return [_no_secret(x) for x in v]
    if isinstance(v, dict):
        return {k: _no_secret(x) for k, x in v.items()}
    return v


def _last_values(events: Path) -> dict[str, Any]:
    """The newest metrics record's values, headline keys first (a few), from the journal's tail."""
    from cockpit.run.summaries import HEADLINE_KEYS, tail_records

    for rec in reversed(tail_records(events, 64 * 1024)):
        if rec.kind == journal.METRICS and rec.step is not None and not rec.data.get("summary"):
            values = {k: v for k, v in rec.data.items() if isinstance(v, int | float) and not isinstance(v, bool)
                      and k != "epoch"}
            order = [k for k in HEADLINE_KEYS if k in values] + [k for k in values if k not in HEADLINE_KEYS]
            return {"step": rec.step, **{k: number(values[k]) for k in order[:LAST_VALUES]}}
    return {}


def _store_last(store: Any, n: int) -> dict[str, Any]:
    from cockpit.run.summaries import HEADLINE_KEYS

    keys = store.keys()
    order = [k for k in HEADLINE_KEYS if k in keys] + [k for k in keys if k not in HEADLINE_KEYS]
    out: dict[str, Any] = {k: {"value": number(store.latest(k)), "step": store.latest_step(k)} for k in order[:n]}
    if len(keys) > n:
        out["more"] = f"{len(keys) - n} more keys: the metrics tool lists them"
    return out


def _finding(d: dict[str, Any], rows: int) -> dict[str, Any]:
    out = {k: d.get(k) for k in ("kind", "severity", "steps", "summary", "fix")}
    evidence = []
    for ev in d.get("evidence") or []:
        if not isinstance(ev, dict):
            continue
        ev = dict(ev)
        if isinstance(ev.get("points"), list) and len(ev["points"]) > 40:
            pts = ev["points"]
            ev["points"] = pts[:20] + pts[-20:]
            ev["points_cut"] = f"40 of {len(pts)} points: the first and last 20"
        if isinstance(ev.get("rows"), list):
            n = len(ev["rows"])
            ev["rows"] = [_row({**r, "step": r.get("step", ev.get("step"))}, 400)
                          for r in ev["rows"][:rows] if isinstance(r, dict)]
            if n > rows:
                ev["rows_cut"] = f"{rows} of {n} rows (the completions tool shows the step)"
        if isinstance(ev.get("prompts"), list):
            ev["prompts"] = [text(x, 300) for x in ev["prompts"][:5]]
        evidence.append(ev)
    out["evidence"] = evidence
    return out


def _row(r: dict[str, Any], chars: int) -> dict[str, Any]:
    out = {"step": r.get("step"), "prompt": text(r.get("prompt") or "", chars),
           "completion": text(r.get("completion") or "", chars),
           "rewards": {k: number(v) for k, v in (r.get("rewards") or {}).items()},
           "advantage": number(r.get("advantage"))}
    extra = r.get("extra")
    if isinstance(extra, dict) and extra:
        out["extra"] = clean({k: v for k, v in list(extra.items())[:10]}, 200)
    return out


def _per_reward(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    out = {}
    for name in names:
        vals = np.array([r["rewards"].get(name, math.nan) for r in rows], dtype=float)
        finite = vals[np.isfinite(vals)]
        out[name] = {"rows": len(finite), "mean": float(finite.mean()) if len(finite) else None,
                     "min": float(finite.min()) if len(finite) else None,
                     "max": float(finite.max()) if len(finite) else None,
                     "distinct": len(np.unique(finite))}
    return out

