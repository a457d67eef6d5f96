"""The trainers cockpit can run, read from the installed TRL without importing it here.

Which trainers exist, their config fields (with help, defaults, choices) and where they live is
discovered by `python -m cockpit.runner.discover` in a subprocess (importing trl costs 10-30 s and
would break the core's no-torch rule) and cached per TRL/transformers version pair. What cannot be
introspected — the data columns a trainer takes, the extra models it needs, whether it runs on a
CPU — comes from `KNOWLEDGE`, measured on the TRL releases the project supports.

A trainer TRL has but `KNOWLEDGE` does not still appears (title from its class, unknown data
formats); a trainer `KNOWLEDGE` knows but the installed TRL lacks (PPO after 1.12) is listed by
`Registry.all_known()` as unavailable with a hint naming the TRL that has it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.paths import cache_dir
from cockpit.run.folder import write_atomic

SCHEMA = 1
DISCOVER_MODULE = "cockpit.runner.discover"
DISCOVER_TIMEOUT_S = 180.0
EXTRA_MODEL_KINDS = ("ref_model", "reward_model", "value_model", "teacher_model", "reward_funcs")

# Keys a TRL CLI YAML may hold besides dataclass fields: `env` is a mapping of environment
# variables TrlParser sets before parsing.
CLI_YAML_EXTRA_KEYS = frozenset({"env"})


@dataclass(frozen=True)
class ConfigField:
    """One field of a TRL config dataclass, as the setup form and the preset validator see it."""

    name: str
    type: str
    """Readable type, e.g. "int", "float|None", "list[str]|None", "Literal['a','b']"."""
    default: Any
    """JSON-safe default (repr string for values JSON cannot hold); a factory's result if `default_factory`."""
    help: str
    choices: tuple[Any, ...] | None
    group: str
    """"TrainingArguments" for fields transformers defines, else the dataclass that adds them."""
    default_factory: bool = False
    required: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigField:
        choices = data.get("choices")
        return cls(
            name=str(data["name"]),
            type=str(data.get("type", "")),
            default=data.get("default"),
            help=str(data.get("help") or ""),
            choices=tuple(choices) if choices is not None else None,
            group=str(data.get("group") or ""),
            default_factory=bool(data.get("default_factory", False)),
            required=bool(data.get("required", False)),
        )

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["choices"] = list(self.choices) if self.choices is not None else None
        return d


@dataclass(frozen=True)
class TrainerSpec:
    """Everything cockpit knows about one TRL trainer: discovered facts plus `KNOWLEDGE`."""

    name: str
    title: str
    summary: str
    module: str | None
    trainer_class: str | None
    config_class: str | None
    experimental: bool
    available: bool
    """The installed TRL has it and it imported."""
    import_error: str | None
    data_formats: tuple[tuple[str, ...], ...]
    """Accepted column sets; a dataset holding any one of them will do. Empty: unknown."""
    extra_models: tuple[str, ...]
    cli_command: str | None
    needs: str | None
    """Why it cannot run on a CPU-only box, or None."""
    samples: bool
    """Generates completions during training (worth a completions panel)."""
    missing_hint: str | None
    fields: tuple[ConfigField, ...]
    config_module: str | None = None
    """Where `config_class` is importable from (the BEMA DPOTrainer's DPOConfig is in `trl`)."""
    script_args: tuple[ConfigField, ...] = ()
    """ScriptArguments fields, plus the ones this trainer's `trl <cli>` script adds (GRPO: reward_funcs)."""
    model_config: tuple[ConfigField, ...] = ()
    dataset_mixture: tuple[ConfigField, ...] = ()
    init_params: tuple[str, ...] = ()
    """Keyword parameters the trainer's constructor accepts (model, ref_model, reward_funcs, ...)."""

    def field(self, name: str) -> ConfigField | None:
        return next((f for f in self.fields if f.name == name), None)

    def to_json(self, with_fields: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "summary": self.summary,
            "module": self.module,
            "trainer_class": self.trainer_class,
            "config_class": self.config_class,
            "config_module": self.config_module,
            "experimental": self.experimental,
            "available": self.available,
            "import_error": self.import_error,
            "data_formats": [list(cols) for cols in self.data_formats],
            "extra_models": list(self.extra_models),
            "cli_command": self.cli_command,
            "needs": self.needs,
            "samples": self.samples,
            "missing_hint": self.missing_hint,
            "init_params": list(self.init_params),
        }
        if with_fields:
            d["fields"] = [f.to_json() for f in self.fields]
        return d


@dataclass(frozen=True)
class Knowledge:
    """Per-trainer facts TRL does not expose (measured on the supported TRL releases)."""

    title: str
    summary: str
    data_formats: tuple[tuple[str, ...], ...] = ()
    extra_models: tuple[str, ...] = ()
    cli: str | None = None
    needs: str | None = None
    samples: bool = False
    module: str | None = None
    """Where it lived, for trainers that may be missing from the installed TRL."""
    last_trl: str | None = None
    """Last TRL release that has it, for trainers TRL has removed."""
    family: str | None = None
    """Whose metrics it logs, for built-in alert rules: "grpo" (group-sampling RL with reward
    functions), "ppo", or None."""


_PREFERENCE = (("prompt", "chosen", "rejected"), ("chosen", "rejected"))
_PROMPT_ONLY = (("prompt",),)
_CPU_SERVER = "a vLLM or teacher server"

KNOWLEDGE: dict[str, Knowledge] = {
    # --- stable (`trl`)
    "sft": Knowledge(
        "Supervised fine-tuning",
        "Trains the model to continue example texts; data: text, prompt/completion, or messages.",
        (("text",), ("prompt", "completion"), ("messages",)),
        cli="sft",
    ),
    "dpo": Knowledge(
        "Direct preference optimization",
        "Raises the chosen answer over the rejected one against a frozen reference; data: prompt/chosen/rejected.",
        _PREFERENCE,
        cli="dpo",
    ),
    "kto": Knowledge(
        "Kahneman-Tversky optimization",
        "Learns from answers labelled good or bad, no pairs needed; data: prompt/completion/label (bool).",
        (("prompt", "completion", "label"), *_PREFERENCE),
        cli="kto",
    ),
    "reward": Knowledge(
        "Reward model training",
        "Trains a sequence-classification model to score chosen above rejected; data: prompt/chosen/rejected.",
        _PREFERENCE,
        cli="reward",
    ),
    "grpo": Knowledge(
        "Group relative policy optimization",
        "Samples a group of completions per prompt and reinforces the better-rewarded ones; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        cli="grpo",
        samples=True,
        family="grpo",
    ),
    "rloo": Knowledge(
        "REINFORCE leave-one-out",
        "Samples several completions per prompt, baseline = the others' mean reward; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        cli="rloo",
        samples=True,
        family="grpo",
    ),
    "distillation": Knowledge(
        "Knowledge distillation",
        "Trains a student to match a teacher model on its own generations; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("teacher_model",),
        cli="distillation",
        samples=True,
    ),
    # --- experimental (`trl.experimental.<name>`)
    "cpo": Knowledge(
        "Contrastive preference optimization",
        "Preference tuning without a reference model, plus an NLL term on chosen; data: prompt/chosen/rejected.",
        _PREFERENCE,
    ),
    "orpo": Knowledge(
        "Odds-ratio preference optimization",
        "SFT plus an odds-ratio penalty on rejected answers, no reference model; data: prompt/chosen/rejected.",
        _PREFERENCE,
    ),
    "online_dpo": Knowledge(
        "Online DPO",
        "Generates two answers per prompt, a reward model or judge picks the better, then a DPO step; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
    ),
    "gkd": Knowledge(
        "Generalized knowledge distillation",
        "Distils a teacher into the student on a mix of dataset and student-generated answers; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "gold": Knowledge(
        "General on-policy logit distillation",
        "On-policy distillation that also works across tokenizers of different model families; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "gmpo": Knowledge(
        "Geometric-mean policy optimization",
        "A steadier GRPO that averages token importance ratios geometrically; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "a2po": Knowledge(
        "A*-PO optimal advantage regression",
        "Estimates each prompt's optimal value offline, then regresses on sampled advantages; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "tpo": Knowledge(
        "Triple preference optimization",
        "DPO-style preference tuning plus SFT on a gold reference answer; data: prompt/chosen/rejected/reference.",
        (("prompt", "chosen", "rejected", "reference"),),
    ),
    "sdft": Knowledge(
        "Self-distillation fine-tuning",
        "The model, shown privileged context, teaches itself without it, on its own samples; "
        "data: prompt + privileged_context.",
        (("prompt", "privileged_context"),),
        samples=True,
    ),
    "sdpo": Knowledge(
        "Self-distillation policy optimization",
        "On-policy RL that also distils from the model's own high-reward rollouts; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "iw_opd": Knowledge(
        "Importance-weighted on-policy distillation",
        "On-policy distillation that down-weights tokens after the student drifts from the teacher; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "bema_for_ref_model": Knowledge(
        "DPO with a BEMA reference model",
        "DPO whose reference model tracks the policy by a bias-corrected moving average; data: prompt/chosen/rejected.",
        _PREFERENCE,
    ),
    "async_grpo": Knowledge(
        "Asynchronous GRPO",
        "GRPO with generation decoupled from training on a vLLM rollout worker; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        needs="CUDA",
        samples=True,
        family="grpo",
    ),
    "async_distillation": Knowledge(
        "Asynchronous distillation",
        "Distillation with rollouts and teacher served from a vLLM server; data: prompt (conversational).",
        _PROMPT_ONLY,
        needs=_CPU_SERVER,
        samples=True,
    ),
    "server_distillation": Knowledge(
        "Server distillation",
        "Distillation whose teacher log-probs come from a vLLM teacher server; data: prompt.",
        _PROMPT_ONLY,
        needs=_CPU_SERVER,
        samples=True,
    ),
    # --- removed from TRL; kept so `cockpit` can say which TRL still has them
    "ppo": Knowledge(
        "Proximal policy optimization",
        "Classic RLHF: samples, scores with a reward model, updates policy and value heads; "
        "data: prompt (cockpit tokenizes it) or input_ids.",
        (("prompt",), ("input_ids",)),
        extra_models=("ref_model", "reward_model", "value_model"),
        samples=True,
        module="trl.experimental.ppo",
        last_trl="1.12",
        family="ppo",
    ),
    "bco": Knowledge(
        "Binary classifier optimization",
        "Learns from answers labelled good or bad via a binary classifier; data: prompt/completion/label.",
        (("prompt", "completion", "label"),),
        module="trl.experimental.bco",
        last_trl="1.13",
    ),
    "nash_md": Knowledge(
        "Nash mirror descent",
        "Online preference tuning against a mixture of policy and reference; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.nash_md",
        last_trl="1.13",
    ),
    "xpo": Knowledge(
        "Exploratory preference optimization",
        "Online DPO with an exploration bonus; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.xpo",
        last_trl="1.13",
    ),
    "prm": Knowledge(
        "Process reward model training",
        "Trains a model to score each reasoning step; data: prompt/completions/labels.",
        (("prompt", "completions", "labels"),),
        module="trl.experimental.prm",
        last_trl="1.13",
    ),
    "gspo_token": Knowledge(
        "GSPO-token",
        "GRPO with sequence-level importance ratios applied per token; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.gspo_token",
        last_trl="1.13",
        family="grpo",
    ),
    "grpo_with_replay_buffer": Knowledge(
        "GRPO with a replay buffer",
        "GRPO that replays past high-variance groups; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.grpo_with_replay_buffer",
        last_trl="1.13",
        family="grpo",
    ),
    "minillm": Knowledge(
        "MiniLLM",
        "On-policy distillation minimising reverse KL to a teacher; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("teacher_model",),
        samples=True,
        module="trl.experimental.minillm",
        last_trl="1.14",
    ),
    "ssd": Knowledge(
        "SSD self-distillation",
        "Fine-tunes with cross-entropy on the model's own sampled completions; data: prompt.",
        _PROMPT_ONLY,
        samples=True,
        module="trl.experimental.ssd",
        last_trl="1.15",
    ),
}


# ---------------------------------------------------------------------------------------------
# Helpers


def _version_tuple(version: str | None) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in (version or "").split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def _next_minor(version: str) -> str:
    parts = _version_tuple(version)
    if len(parts) >= 2:
        return f"{parts[0]}.{parts[1] + 1}"
    return f"after {version}"


def _title_from_class(trainer_class: str | None, name: str) -> str:
    """'ServerDistillationTrainer' -> 'Server distillation' (used when KNOWLEDGE has no entry)."""
    base = (trainer_class or "").removesuffix("Trainer") or name
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", base).split()
    if not words:
        return name
    out = [words[0]] + [w if w.isupper() else w.lower() for w in words[1:]]
    return " ".join(out)


def _import_error_hint(name: str, error: str) -> str:
    m = re.search(r"No module named '([\w.]+)'", error)
    if m:
        package = m.group(1).split(".")[0]
        return f"{name} failed to import ({error}) — pip install {package}"
    return f"{name} failed to import: {error}"


def _normalise(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def _fields(items: Iterable[Mapping[str, Any]]) -> tuple[ConfigField, ...]:
    return tuple(ConfigField.from_json(item) for item in items)


# ---------------------------------------------------------------------------------------------
# The registry


class Registry:
    """The trainers of one installed TRL, merged with `KNOWLEDGE`."""

    def __init__(self, discovery: Mapping[str, Any]) -> None:
        self.discovery = dict(discovery)
        self.trl_version: str = str(discovery.get("trl_version") or "")
        self.transformers_version: str = str(discovery.get("transformers_version") or "")
        self.script_args: tuple[ConfigField, ...] = _fields(discovery.get("script_args", ()))
        self.model_config: tuple[ConfigField, ...] = _fields(discovery.get("model_config", ()))
        self.dataset_mixture: tuple[ConfigField, ...] = _fields(discovery.get("dataset_mixture", ()))

        discovered: dict[str, TrainerSpec] = {}
        for entry in discovery.get("trainers", ()):
            if entry.get("alias_of"):
                continue  # trl.experimental.kto / .distillation: deprecated re-exports of the stable class
            spec = self._spec_from_discovery(entry)
            previous = discovered.get(spec.name)
            # Should two entries share a name, keep the one that imported (then the stable one).
            if previous is None or (spec.available and not previous.available):
                discovered[spec.name] = spec
        self._discovered = discovered

        missing: dict[str, TrainerSpec] = {}
        for name, know in KNOWLEDGE.items():
            if name not in discovered:
                missing[name] = self._missing_spec(name, know)
        self._missing = missing

        self.trainers: list[TrainerSpec] = sorted(
            (s for s in discovered.values() if s.available), key=lambda s: (s.experimental, s.name)
        )

    # -- building specs

    def _spec_from_discovery(self, entry: Mapping[str, Any]) -> TrainerSpec:
        name = str(entry["name"])
        know = KNOWLEDGE.get(name)
        import_error = entry.get("import_error")
        has_classes = bool(entry.get("trainer_class")) and bool(entry.get("config_class"))
        available = not import_error and has_classes
        init_params = tuple(entry.get("init_params") or ())
        if know is not None:
            extra_models = know.extra_models
        else:
            extra_models = tuple(p for p in EXTRA_MODEL_KINDS if p in init_params)
        cli_fields = _fields(entry.get("cli_fields") or ())
        missing_hint = None
        if not available:
            missing_hint = _import_error_hint(name, str(import_error or "no trainer/config class found"))
        title = know.title if know else _title_from_class(entry.get("trainer_class"), name)
        summary = know.summary if know else f"{title} ({entry.get('module')}); data formats not known to cockpit."
        return TrainerSpec(
            name=name,
            title=title,
            summary=summary,
            module=entry.get("module"),
            trainer_class=entry.get("trainer_class"),
            config_class=entry.get("config_class"),
            experimental=bool(entry.get("experimental")),
            available=available,
            import_error=import_error,
            data_formats=know.data_formats if know else (),
            extra_models=extra_models,
            cli_command=entry.get("cli_command") or (know.cli if know and "cli_command" not in entry else None),
            needs=know.needs if know else None,
            samples=know.samples if know else False,
            missing_hint=missing_hint,
            fields=_fields(entry.get("fields") or ()),
            config_module=entry.get("config_module") or entry.get("module"),
            script_args=self.script_args + cli_fields,
            model_config=self.model_config,
            dataset_mixture=self.dataset_mixture,
            init_params=init_params,
        )

    def _missing_spec(self, name: str, know: Knowledge) -> TrainerSpec:
        installed = self.trl_version or "?"
        if know.last_trl and _version_tuple(installed) > _version_tuple(know.last_trl):
            hint = (
                f"{name} was removed in TRL {_next_minor(know.last_trl)} — "
                f"pip install 'trl=={know.last_trl}.*' to use it"
            )
        else:
            hint = f"{name} is not in the installed TRL {installed} — pip install -U trl"
        return TrainerSpec(
            name=name,
            title=know.title,
            summary=know.summary,
            module=know.module,
            trainer_class=None,
            config_class=None,
            experimental=bool(know.module and know.module.startswith("trl.experimental")),
            available=False,
            import_error=None,
            data_formats=know.data_formats,
            extra_models=know.extra_models,
            cli_command=None,
            needs=know.needs,
            samples=know.samples,
            missing_hint=hint,
            fields=(),
            script_args=self.script_args,
            model_config=self.model_config,
            dataset_mixture=self.dataset_mixture,
        )

    # -- queries

    def names(self) -> list[str]:
        return [s.name for s in self.trainers]

    def all_known(self) -> list[TrainerSpec]:
        """Available trainers, then discovered-but-broken ones, then ones this TRL lacks."""
        broken = sorted((s for s in self._discovered.values() if not s.available), key=lambda s: s.name)
        absent = sorted(self._missing.values(), key=lambda s: s.name)
        return [*self.trainers, *broken, *absent]

    def get(self, name: str) -> TrainerSpec:
        """The spec for `name`, or a CockpitError saying what to type or install instead."""
        key = _normalise(name)
        spec = self._discovered.get(key) or self._missing.get(key)
        if spec is None:
            candidates = [*self._discovered, *self._missing]
            close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
            hint = f" — did you mean '{close[0]}'? " if close else " — "
            raise CockpitError(f"unknown trainer '{name}'{hint}`cockpit trainers` lists them")
        if not spec.available:
            raise CockpitError(spec.missing_hint or f"{spec.name} is not available in TRL {self.trl_version}")
        return spec

    def fields(self, name: str) -> tuple[ConfigField, ...]:
        return self.get(name).fields

    def to_dict(self, with_fields: bool = True) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "trl_version": self.trl_version,
            "transformers_version": self.transformers_version,
            "trainers": [s.to_json(with_fields=with_fields) for s in self.all_known()],
            "script_args": [f.to_json() for f in self.script_args],
            "model_config": [f.to_json() for f in self.model_config],
            "dataset_mixture": [f.to_json() for f in self.dataset_mixture],
        }

    def to_json(self, with_fields: bool = True) -> str:
        return json.dumps(self.to_dict(with_fields=with_fields), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Loading (cache or discovery subprocess)


TRAINING_STACK = ("torch", "transformers", "trl", "peft", "datasets", "accelerate")


def require_training_stack() -> None:
    """Launching, setting up and checking runs need the `train` extra; the viewer does not.

    One line naming every missing package and the extra that brings them, before anything starts.
    """
    missing = [name for name in TRAINING_STACK if importlib.util.find_spec(name) is None]
    if missing:
        raise CockpitError(
            f"this needs the training stack, and {', '.join(missing)} {'is' if len(missing) == 1 else 'are'}"
            " not installed — pip install 'cockpit[train]' (viewing, replay and export work without it)"
        )


def installed_versions() -> tuple[str, str]:
    """(trl, transformers) versions from package metadata — cheap, imports neither."""
    require_training_stack()
    return importlib.metadata.version("trl"), importlib.metadata.version("transformers")


def schema_cache_path(trl_version: str, transformers_version: str) -> Path:
    return cache_dir() / "schemas" / f"trl-{trl_version}-transformers-{transformers_version}-schema{SCHEMA}.json"


def _read_cache(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent or half-written by an old cockpit: rediscover
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("trainers"), list):
        return None
    return data


def _project_root() -> str:
    """The folder holding the `cockpit` package, so the subprocess imports this very cockpit."""
    return str(Path(__file__).resolve().parent.parent.parent)


def run_discovery(python: str = sys.executable, timeout: float = DISCOVER_TIMEOUT_S) -> dict[str, Any]:
    """Run `python -m cockpit.runner.discover` and return its JSON; CockpitError on any failure."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_project_root(), env.get("PYTHONPATH", "")) if p)
    env.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    env.setdefault("PYTHONWARNINGS", "ignore")
    try:
        proc = subprocess.run(
            [python, "-m", DISCOVER_MODULE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        raise CockpitError(f"cannot run {python} to read the TRL trainers — check the Python path") from None
    except PermissionError:
        raise CockpitError(f"cannot run {python} to read the TRL trainers — it is not executable") from None
    except subprocess.TimeoutExpired:
        raise CockpitError(
            f"reading the TRL trainers took over {timeout:.0f} s — try again, or check `python -c 'import trl'`"
        ) from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        raise CockpitError(f"reading the TRL trainers failed: {last}")
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise CockpitError("reading the TRL trainers failed: discovery printed something other than JSON") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CockpitError(
            f"reading the TRL trainers failed: schema {data.get('schema') if isinstance(data, dict) else '?'}"
            f" from {python}, expected {SCHEMA} — is it running an older cockpit?"
        )
    return data


def load_registry(refresh: bool = False, python: str = sys.executable) -> Registry:
    """The registry for the installed TRL: from the schema cache, else by discovery (10-30 s).

    The cache is keyed by the TRL and transformers versions this process sees in package metadata;
    `python` runs the discovery and should live in the same environment. `refresh` rediscovers.
    """
    trl_version, tf_version = installed_versions()
    path = schema_cache_path(trl_version, tf_version)
    if not refresh:
        cached = _read_cache(path)
        if cached is not None:
            return Registry(cached)
    data = run_discovery(python)
    # Key by what the discovery actually imported (a different `python` may have other versions).
    found = schema_cache_path(
        str(data.get("trl_version") or trl_version), str(data.get("transformers_version") or tf_version)
    )
    try:
        found.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(found, json.dumps(data, ensure_ascii=False))
    except OSError as exc:  # a read-only cache only costs the next start another discovery
        print(f"cockpit: could not write {found}: {exc}", file=sys.stderr)
    return Registry(data)


# ---------------------------------------------------------------------------------------------
# The flat TRL-CLI YAML key space


def known_config_keys(spec: TrainerSpec) -> set[str]:
    """Keys a flat TRL CLI YAML for this trainer may hold: its config, script args, model config,
    the dataset mixture (`datasets:`) and `env`."""
    keys = {f.name for f in spec.fields}
    for group in (spec.script_args, spec.model_config, spec.dataset_mixture):
        keys.update(f.name for f in group)
    keys.update(CLI_YAML_EXTRA_KEYS)
    return keys


def suggest_key(spec: TrainerSpec, key: str) -> str | None:
    """The known key closest to a misspelt one ('learning_rat' -> 'learning_rate'), if any is close."""
    close = difflib.get_close_matches(key, sorted(known_config_keys(spec)), n=1, cutoff=0.75)
    return close[0] if close else None


def check_config_keys(spec: TrainerSpec, keys: Iterable[str]) -> None:
    """Raise CockpitError for the first key the trainer's TRL YAML would reject."""
    known = known_config_keys(spec)
    for key in keys:
        if key in known:
            continue
        close = suggest_key(spec, key)
        hint = (
            f" — did you mean '{close}'?"
            if close
            else f" — not an option of {spec.config_class or spec.name}, the script arguments or the model config"
        )
        raise CockpitError(f"unknown config key '{key}'{hint}")


__all__ = [
    "CLI_YAML_EXTRA_KEYS",
    "EXTRA_MODEL_KINDS",
    "KNOWLEDGE",
    "ConfigField",
    "Knowledge",
    "Registry",
    "TrainerSpec",
    "check_config_keys",
    "installed_versions",
    "known_config_keys",
    "load_registry",
    "run_discovery",
    "schema_cache_path",
    "suggest_key",
]
