"""Asking checkpoints for answers: which model files a choice means, with which tokenizer, on
which device and through which Python; the request (`sample_request`, settings from run.yaml's
`cockpit.sample`), the sampler process (`python -m cockpit.runner.sample`) that loads them, and
its events, typed (`SamplerEvent`). `cockpit sample`, `cockpit merge` and the Checkpoints tab
share it; none of them imports torch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from cockpit.errors import CockpitError
from cockpit.files import open_own
from cockpit.launch import DEFAULT_NEW_TOKENS
from cockpit.metrics.checkpoints import CheckpointSet, run_started_data
from cockpit.run.section import cockpit_section

DEFAULT_PROMPTS = 4


@dataclass
class Choice:
    """One model to sample: `base` or a checkpoint, as the sampler's request names it."""

    label: str
    step: int | None
    spec: dict[str, Any] = field(default_factory=dict)


def _local_missing(ref: str) -> bool:
    """A path (absolute, ./ or ~) that is not there; hub ids are checked by the sampler."""
    return ref.startswith(("/", "./", "../", "~")) and not Path(ref).expanduser().exists()


def run_tokenizer(found: CheckpointSet) -> str | None:
    """The tokenizer the run trained with: the one its newest complete checkpoint (or the final
    save) holds, chat template included; None when it saved none."""
    for ckpt in reversed(found.checkpoints):
        if ckpt.complete and ckpt.has_tokenizer:
            return str(ckpt.path)
    if (found.output_dir / "tokenizer_config.json").is_file():
        return str(found.output_dir)
    return None


_TRAINER_KEY = re.compile(r"^t(\d+):(.*)$", re.DOTALL)


def trainer_key(trainer: int, which: str) -> str:
    """A checkpoint of the `trainer`th Trainer (from 1) of a script that built several:
    `t1:checkpoint-24` (`t1:24`, `t1:latest` and `t1:base` too). `cockpit checkpoints` prints it,
    `--checkpoint`/`--vs` take it and the Checkpoints tab keys its rows by it."""
    return f"t{trainer}:{which}"


def resolve_key(found: CheckpointSet, earlier: Sequence[CheckpointSet], which: str,
                ) -> tuple[CheckpointSet, str, int | None]:
    """A checkpoint key → (the CheckpointSet of the Trainer it names, the checkpoint within it, that
    Trainer from 1 when the key named one). `tN:WHICH` is the Nth Trainer's (`earlier` are the
    Trainers before the last, `launch.script.earlier_trainers`; the last is `found`); any other key
    is the last Trainer's. The one rule for `cockpit sample`/`merge` and the Checkpoints tab."""
    m = _TRAINER_KEY.match(str(which))
    if m is None:
        return found, str(which), None
    n, rest = int(m.group(1)), m.group(2) or "latest"
    trainers = [*earlier, found]
    if not 1 <= n <= len(trainers):
        where = found.run.name if found.run else str(found.output_dir)
        keys = " or ".join(trainer_key(i, rest) for i in range(1, len(trainers) + 1))
        built = f"built {len(trainers)} Trainers" if len(trainers) > 1 else "built one Trainer"
        raise CockpitError(f"{which}: there is no Trainer {n} — {where} {built}; give {keys} "
                           "(`cockpit checkpoints` lists each one's)")
    return trainers[n - 1], rest, n


def choose(found: CheckpointSet, which: str, slot: str, earlier: Sequence[CheckpointSet] = ()) -> Choice:
    """`base`, `latest`, a step or an earlier Trainer's `tN:` key (`resolve_key`) → the sampler's
    model spec, or one line naming the fix. A model of a script's several Trainers is labelled with
    its Trainer when the key named one (two Trainers both have a checkpoint-2)."""
    whole = found
    found, which, trainer = resolve_key(found, earlier, which)
    step = str(which).removeprefix("checkpoint-")
    if step.isdigit() and found.checkpoints and all(c.step != int(step) for c in found.checkpoints):
        where = whole.run.name if whole.run else str(whole.output_dir)
        mine = f" of Trainer {trainer}" if trainer is not None and earlier else ""
        raise CockpitError(f"{where}: no checkpoint at step {int(step)}{mine} — there are: "
                           f"{', '.join(all_keys(whole, earlier))} (and base)")
    choice = _choose(found, which, slot)
    if trainer is None or not earlier:
        return choice
    label = f"Trainer {trainer}: {choice.label}"
    return Choice(label, choice.step, {**choice.spec, "label": label})


def all_keys(found: CheckpointSet, earlier: Sequence[CheckpointSet] = ()) -> list[str]:
    """Every key `--checkpoint` takes for a run, oldest Trainer first: an earlier Trainer's as
    `tN:STEP`, the last one's as its step."""
    keys = [trainer_key(i + 1, str(c.step)) for i, one in enumerate(earlier) for c in one.checkpoints]
    return keys + [str(c.step) for c in found.checkpoints]


def _choose(found: CheckpointSet, which: str, slot: str) -> Choice:
    where = found.run.name if found.run else str(found.output_dir)
    if str(which) == "base":
        base = found.base_model
        if not base:
            raise CockpitError(f"{where}: which base model it started from is not recorded — sample a "
                               "checkpoint instead (--checkpoint latest)")
        if _local_missing(base):
            raise CockpitError(f"the base model {base} is not there any more — restore it, or sample a "
                               "checkpoint instead (--checkpoint latest)")
        return Choice("base", None, {"slot": slot, "label": "base", "kind": "base", "path": base,
                                     "tokenizer": run_tokenizer(found) or base})
    ckpt = found.usable(found.find(which))
    spec: dict[str, Any] = {"slot": slot, "label": ckpt.name, "kind": ckpt.kind if ckpt.kind != "unknown"
                            else "full", "path": str(ckpt.path)}
    if ckpt.kind == "lora":
        base = ckpt.base or found.base_model
        if not base:
            raise CockpitError(f"{ckpt.name} is a LoRA adapter whose base model is not named (adapter_config.json "
                               "has no base_model_name_or_path) — add it there")
        if _local_missing(base):
            raise CockpitError(f"{ckpt.name} is a LoRA adapter on {base}, which is not there any more — restore "
                               "the base model at that path, or edit base_model_name_or_path in "
                               f"{ckpt.path / 'adapter_config.json'}")
        spec["base"] = base
    spec["tokenizer"] = str(ckpt.path) if ckpt.has_tokenizer else (run_tokenizer(found) or spec.get("base")
                                                                     or str(ckpt.path))
    return Choice(ckpt.name, ckpt.step, spec)


def sample_settings(found: CheckpointSet) -> dict[str, Any]:
    """run.yaml's `cockpit.sample` (device, max_memory, max_new_tokens)."""
    if found.run is None:
        return {}
    return cockpit_section(found.run).sample


_SIZE = re.compile(r"^\s*([\d.]+)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)


def parse_size(text: Any) -> int | None:
    """`8GB`, `512MB`, `1.5G`, a number of bytes; None when not set."""
    if text in (None, ""):
        return None
    m = _SIZE.match(str(text))
    if not m:
        raise CockpitError(f"max_memory {text!r}: expected a size like 8GB or 512MB")
    unit = (m.group(2) or "b").lower()[0]
    return int(float(m.group(1)) * {"b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[unit])


def training_device(found: CheckpointSet) -> str | None:
    """`cpu` or `cuda` while the run trains, else None."""
    if not found.live or found.run is None:
        return None
    return str(run_started_data(found.run).get("device") or "cpu")


def live_note(found: CheckpointSet, device: str) -> str | None:
    """What sampling beside a live run costs it, said before it starts."""
    training = training_device(found)
    if training is None:
        return None
    if training == "cpu" and device == "cpu":
        return ("the run is training on the CPU too: sampling shares it (at low priority, one thread) and "
                "may slow the training a little — set cockpit.sample.device to a free GPU to keep off it")
    if training.startswith("cuda") and device.startswith("cuda"):
        return (f"the run is training on a GPU and sampling is set to {device}: if that is the same GPU, "
                "the training slows — use device auto (a GPU no training uses) or cpu")
    return None


def sampler_python(found: CheckpointSet, given: str | None = None) -> str:
    """The Python the sampler (and merger) runs on: `--python` when given; else a script run's own
    (recorded in run_started), so the model classes match; else this cockpit's."""
    return python_and_why(found, given)[0]


def python_and_why(found: CheckpointSet, given: str | None = None) -> tuple[str, str]:
    """(the sampler's Python, how it was chosen, in words); a `--python` that is no program is one line."""
    if given:
        path = Path(given).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise CockpitError(f"--python {given}: no such program — give the python of the env the model was "
                               "trained in, e.g. /path/to/venv/bin/python")
        return str(path), "given with --python"
    if found.run is not None:
        recorded = run_started_data(found.run).get("python")
        if recorded and Path(str(recorded)).is_file():
            return str(recorded), "the Python the run's script trained with"
    return sys.executable, "this cockpit's own Python"


def missing_module_hint(message: str, python: str, why: str) -> str:
    """A sampler or merger that could not import what it needs (ModuleNotFoundError: transformers,
    peft, torch): the line names the Python it ran on and how to give another; others unchanged."""
    if "No module named" not in message:
        return message
    if why.startswith("given"):
        return f"{message} — it ran on {python} ({why}), which lacks it: give the Python of the env the model " \
            "was trained in"
    return (f"{message} — it ran on {python} ({why}); give the Python of the env the model was trained "
            "in: --python /path/to/venv/bin/python")


def read_prompts_file(path: str) -> list[Any]:
    """Prompts from a file: a JSON list, JSON lines (strings, {"prompt"} or {"messages"}), or
    plain text, one prompt a line."""
    from cockpit.files import read_text_regular

    p = Path(path).expanduser()
    try:
        text = read_text_regular(p, 64 << 20)  # bounded, and never a FIFO or a device
    except OSError as exc:
        raise CockpitError(f"--prompts {path}: cannot read it ({exc.strerror}) — give a text file, one prompt "
                           "a line") from None
    if p.suffix == ".json":
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise CockpitError(f"--prompts {path}: not valid JSON ({exc}) — give a list of prompts") from None
        if not isinstance(items, list):
            raise CockpitError(f"--prompts {path}: expected a JSON list of prompts")
    elif p.suffix == ".jsonl":
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError:
                raise CockpitError(f"--prompts {path}:{n}: not valid JSON — one prompt (a string, "
                                   '{"prompt": ...} or {"messages": [...]}) a line') from None
    else:
        items = [line for line in text.splitlines() if line.strip()]
    prompts = [(i.get("messages") or i.get("prompt")) if isinstance(i, dict) else i for i in items]
    prompts = [p for p in prompts if p]
    if not prompts:
        raise CockpitError(f"--prompts {path}: no prompts in it")
    return prompts


def run_prompts(found: CheckpointSet, n: int | None = None) -> list[Any]:
    """The run's own sample prompts: those its periodic samples (or its trainer's own) answered,
    as the model saw them."""
    if found.run is None:
        return []
    from cockpit.metrics.completions import CompletionsLibrary

    if n is None:
        n = int(cockpit_section(found.run).completions.get("num_prompts", DEFAULT_PROMPTS))
    lib = CompletionsLibrary(found.run.path)
    lib.refresh()
    seen: list[str] = []
    for step in lib.steps()[:1]:
        for row in lib.rows(step):
            prompt = row.get("prompt")
            if prompt and prompt not in seen:
                seen.append(prompt)
    return seen[:n]


PRIVATE = "_cockpit_sampler"
"""The sampler's private package name (`cockpit.bundle`): the copy of `cockpit.runner.sample` and
`.merge`, and the modules they import (`cockpit.errors`, `cockpit.runner.parent`)."""
ROOTS = ("cockpit.runner.sample", "cockpit.runner.merge")


def sampler_folder() -> Path:
    """The sampler's own folder (under the cache dir, named by its contents): the only thing of the
    cockpit's on the sampler's PYTHONPATH, so a script run's Python imports its own env's packages
    and never the cockpit env's (another Python's numpy does not load)."""
    from cockpit import bundle
    from cockpit.paths import cache_dir

    try:
        return bundle.cached(ROOTS, PRIVATE, cache_dir() / "bundles")
    except OSError as exc:
        raise CockpitError(f"cannot write the sampler's folder under {cache_dir() / 'bundles'} "
                           f"({exc.strerror or exc}) — free some space there, or set COCKPIT_CACHE_DIR "
                           "to a writable folder") from None


def sampler_command(python: str, module: str, *args: str) -> list[str]:
    """`python -m _cockpit_sampler.runner.<module> ARGS` (module: sample or merge)."""
    return [python, "-m", f"{PRIVATE}.runner.{module}", *args]


def sampler_env(folder: Path | None = None) -> dict[str, str]:
    """Our environment with the sampler's folder first on PYTHONPATH and nothing else of the
    cockpit's; the user's own PYTHONPATH is kept after it."""
    env = dict(os.environ)
    folder = folder or sampler_folder()
    parts = [str(folder), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


@dataclass(frozen=True)
class SampleRequest:
    """One request to the sampler: the models (`choices`, slots a and b), the prompts (text, or
    a chat's messages) and how to generate. `note`: what sampling beside the live run costs it,
    to say before it starts."""

    id: str
    choices: list[Choice]
    prompts: list[Any]
    chat: bool
    max_new_tokens: int
    temperature: float
    seed: int
    device: str
    max_memory: int | None
    note: str | None

    def to_json(self) -> dict[str, Any]:
        """The request line the sampler reads."""
        return {"id": self.id, "models": [c.spec for c in self.choices], "prompts": self.prompts,
                "chat": self.chat, "max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "seed": self.seed, "device": self.device, "max_memory": self.max_memory,
                "gentle": self.note is not None and self.device == "cpu"}

    def choice(self, slot: str) -> Choice | None:
        return next((c for c in self.choices if c.spec.get("slot") == slot), None)

    def kept_row(self, answer: Answer, *, mode: str, prompt: str | None = None,
                 turn: int | None = None) -> dict[str, Any]:
        """An answer as samples/ keeps it (`metrics.samples.append`)."""
        choice = self.choice(answer.slot)
        return {"mode": mode, "checkpoint": choice.label if choice else answer.label,
                "step": choice.step if choice else None, "turn": turn,
                "prompt": answer.prompt if prompt is None else prompt, "completion": answer.text,
                "seed": self.seed, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "device": self.device}


def sample_request(found: CheckpointSet, choices: list[Choice], prompts: list[Any], *, id: str, chat: bool,
                   device: str | None = None, max_memory: str | None = None, max_new_tokens: int | None = None,
                   temperature: float = 0.0, seed: int = 0) -> SampleRequest:
    """A request, what is not given taken from run.yaml's `cockpit.sample` (device, max_memory,
    max_new_tokens; cpu, no cap and 64 tokens when not set there either). CockpitError, every
    problem at once, for numbers or prompts the sampler would refuse or choke on."""
    settings = sample_settings(found)
    tokens = max_new_tokens or settings.get("max_new_tokens", DEFAULT_NEW_TOKENS)
    problems = request_problems(max_new_tokens=tokens, temperature=temperature, prompts=prompts)
    if problems:
        raise CockpitError("\n".join(problems))
    assert isinstance(tokens, int)  # request_problems said so
    device = str(device or settings.get("device") or "cpu")
    cap = parse_size(max_memory or settings.get("max_memory"))
    return SampleRequest(id=id, choices=choices, prompts=prompts, chat=chat, max_new_tokens=tokens,
                         temperature=temperature, seed=seed, device=device, max_memory=cap,
                         note=live_note(found, device))


# -- the sampler's events ----------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """Something to say before the answers (the device it fell back to, sharing the CPU)."""

    text: str
    event: Literal["note"] = "note"


@dataclass(frozen=True)
class Loading:
    slot: str
    label: str | None = None
    event: Literal["loading"] = "loading"


@dataclass(frozen=True)
class Loaded:
    slot: str
    label: str | None = None
    device: str | None = None
    event: Literal["loaded"] = "loaded"


@dataclass(frozen=True)
class Started:
    """A model starts on a prompt: `prompt` is the text it sees (through its chat template)."""

    slot: str
    index: int
    prompt: str
    event: Literal["start"] = "start"


@dataclass(frozen=True)
class Token:
    """The next piece of an answer being generated."""

    slot: str
    index: int
    text: str
    event: Literal["token"] = "token"


@dataclass(frozen=True)
class Answer:
    slot: str
    index: int
    prompt: str
    text: str
    label: str | None = None
    event: Literal["answer"] = "answer"


@dataclass(frozen=True)
class Failed:
    """The request failed (its last event): one line; `traceback`: the sampler's log holds one."""

    message: str
    traceback: bool = False
    event: Literal["error"] = "error"


@dataclass(frozen=True)
class Done:
    """Every answer of the request was given (its last event)."""

    event: Literal["done"] = "done"


SamplerEvent = Note | Loading | Loaded | Started | Token | Answer | Failed | Done
_KINDS = frozenset(("note", "loading", "loaded", "start", "token", "answer", "error", "done"))


@cache
def _event_adapter() -> Any:
    from pydantic import Field, TypeAdapter

    return TypeAdapter(Annotated[SamplerEvent, Field(discriminator="event")])


class MalformedEvent(ValueError):
    """A sampler event of a known kind whose fields have the wrong shape."""


def parse_event(obj: object) -> SamplerEvent | None:
    """One decoded event line, typed; None for a kind this cockpit does not know (a newer sampler's);
    MalformedEvent, naming the kind and the field, for one of the wrong shape."""
    from pydantic import ValidationError

    kind = obj.get("event") if isinstance(obj, dict) else None
    if kind not in _KINDS:
        return None
    try:
        event: SamplerEvent = _event_adapter().validate_python(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"][1:]) or "?"
        raise MalformedEvent(f"a {kind!r} event whose {where} is wrong ({err['msg']})") from None
    return event


class Sampler:
    """The sampler process: requests in, events out (JSON lines). It lives until `close()`, so a
    chat's turns reuse the loaded model; it is its own session, never in a run's process group."""

    @classmethod
    def for_run(cls, found: CheckpointSet, python: str | None = None) -> Sampler:
        """The sampler for a run's checkpoints: through the run's own Python (or `python`, from
        --python), its stderr in the run's samples/ folder."""
        return cls(sampler_python(found, python), sampler_log(found))

    def __init__(self, python: str, log: Path | None = None) -> None:
        env = sampler_env()
        self._log: IO[bytes] | int = subprocess.DEVNULL
        self.log_path = log
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            # held while the process lives; never through a link (`files.open_own`)
            self._log = os.fdopen(open_own(log, os.O_WRONLY | os.O_APPEND), "ab")
        try:
            self.proc = subprocess.Popen(sampler_command(python, "sample"), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._log, env=env,
                                         start_new_session=True, text=True, encoding="utf-8", bufsize=1)
        except OSError:
            if not isinstance(self._log, int):
                self._log.close()
            raise

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()

    def _where(self) -> str:
        return f"the traceback is in {self.log_path}" if self.log_path is not None else "no log was kept"

    def ask(self, request: SampleRequest) -> Iterator[SamplerEvent]:
        """Send the request; its events until its last one (`Done` or `Failed`)."""
        self.send(request.to_json())
        return self.events()

    def events(self) -> Iterator[SamplerEvent]:
        """Events until the request's `Done` or `Failed`, or until the process ends. An error the
        sampler did not foresee names the log file that holds its traceback; an event of the wrong
        shape is the request's end too (the sampler is stopped: what it says next cannot be read)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = parse_event(json.loads(line))
            except MalformedEvent as exc:
                self.kill()
                yield Failed(f"the sampler sent {exc}, so it was stopped — {self._where()}")
                return
            except ValueError:  # not JSON: a library's stray print
                continue
            if event is None:
                continue
            if isinstance(event, Failed) and event.traceback:
                event = Failed(f"{event.message} — {self._where()}")
            yield event
            if isinstance(event, (Done, Failed)):
                return
        code = self.proc.wait()
        yield Failed(f"the sampler ended (exit {code}) — {self._where()}")

    def close(self, timeout: float = 10.0) -> None:
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        if not isinstance(self._log, int):
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.close()


@dataclass
class Collected:
    """What one request's events came to (`collect`)."""

    answers: dict[int, dict[str, str]] = field(default_factory=dict)
    """Each prompt's answers (by its index), by slot."""
    notes: list[str] = field(default_factory=list)
    failed: str | None = None
    """The message of the request's `Failed` event; None when it was not one."""


def collect(sampler: Sampler, request: SampleRequest, *, session: Path | None,
            each: Callable[[SamplerEvent, Collected], None] | None = None) -> Collected:
    """Ask `sampler` and gather the request's events: the answers by prompt and slot (each kept
    in samples/ `session`, when given, as a compared answer as soon as it comes), the notes and
    the failure. `each` sees every event once it is counted (the CLI prints as they come).
    `cockpit sample` and the agent's sample tool read a request through this; the TUI streams
    each token to the screen instead."""
    from cockpit.metrics import samples as kept

    got = Collected()
    for ev in sampler.ask(request):
        if isinstance(ev, Note):
            got.notes.append(ev.text)
        elif isinstance(ev, Failed):
            got.failed = ev.message
        elif isinstance(ev, Answer):
            got.answers.setdefault(ev.index, {})[ev.slot] = ev.text
            if session is not None:
                kept.append(session, request.kept_row(ev, mode="compare"))
        if each is not None:
            each(ev, got)
    return got


def sampler_log(found: CheckpointSet, name: str = "sampler.log") -> Path:
    """Where the sampler's (or merger's) stderr goes: the run's samples/ folder, or for an output
    folder that is not a run's, the cockpit's cache (the user's folder is theirs)."""
    if found.run is not None:
        return found.run.samples / name
    from cockpit.paths import cache_dir

    return cache_dir() / "logs" / name


MAX_NEW_TOKENS = 32_768
"""The most tokens one answer may ask for: past this no small model's context holds it, and
`--max-new-tokens 10^12` would only keep a CPU busy for days."""
MAX_TEMPERATURE = 100.0
MAX_PROMPT_CHARS = 100_000
"""The longest prompt sent to a sampler (a prompt is tokenized whole; a 1 MB one takes minutes
before the first token, and no checkpoint's context holds it)."""


def request_problems(*, max_new_tokens: object, temperature: object, prompts: list[Any]) -> list[str]:
    """What is wrong with a sample request's numbers and prompts, one line each (every problem at
    once): max_new_tokens a whole number from 1 to MAX_NEW_TOKENS, temperature a finite number from
    0 to MAX_TEMPERATURE, each prompt at most MAX_PROMPT_CHARS characters."""
    import math

    out = []
    if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                                       or not 1 <= max_new_tokens <= MAX_NEW_TOKENS):
        out.append(f"--max-new-tokens {str(max_new_tokens)[:40]}: give a whole number from 1 to {MAX_NEW_TOKENS:,}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not math.isfinite(temperature) \
            or not 0 <= temperature <= MAX_TEMPERATURE:
        out.append(f"--temperature {str(temperature)[:40]}: give a number from 0 (greedy) to {MAX_TEMPERATURE:g}")
    for i, prompt in enumerate(prompts, 1):
        size = len(prompt if isinstance(prompt, str) else json.dumps(prompt))
        if size > MAX_PROMPT_CHARS:
            out.append(f"prompt {i}: {size:,} characters — at most {MAX_PROMPT_CHARS:,}; shorten it")
    return out
