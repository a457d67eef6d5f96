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

import contextlib
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from packaging.version import InvalidVersion, Version

from cockpit.errors import CockpitError
from cockpit.files import write_atomic
from cockpit.trainers import camel_words
from cockpit.trainers.discovery import (
    SCHEMA,
    installed_versions,
    read_cache,
    run_discovery,
    schema_cache_path,
    versions_of,
)
from cockpit.trainers.knowledge import EXTRA_MODEL_KINDS, KNOWLEDGE, Knowledge, traits

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
    kinds: tuple[str, ...] | None = None
    """The JSON kinds a value may be written as (bool, int, float, str, list, dict, null), in the
    order the type names them, as discovery read them from the real type; None when it could not
    tell (an annotation TRL left a string), and then validation reads `type`."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigField:
        choices = data.get("choices")
        kinds = data.get("kinds")
        return cls(
            name=str(data["name"]),
            type=str(data.get("type", "")),
            default=data.get("default"),
            help=str(data.get("help") or ""),
            choices=tuple(choices) if choices is not None else None,
            group=str(data.get("group") or ""),
            default_factory=bool(data.get("default_factory", False)),
            required=bool(data.get("required", False)),
            kinds=tuple(str(k) for k in kinds) if isinstance(kinds, list) else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "choices": list(self.choices) if self.choices is not None else None,
                "kinds": list(self.kinds) if self.kinds is not None else None}


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
        """Every field, JSON-ready (tuples as lists), but the CLI-script field lists the registry
        writes once for all trainers; `fields` only `with_fields`."""
        drop = {"script_args", "model_config", "dataset_mixture"} | (set() if with_fields else {"fields"})
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name not in drop}

    @property
    def traits(self) -> Knowledge:
        """How this trainer differs, from the knowledge table (defaults for one it does not know)."""
        return traits(self.name)


# ---------------------------------------------------------------------------------------------
# Helpers


def _plain(value: Any) -> Any:
    """A spec's value as JSON holds it: tuples as lists, a ConfigField as its mapping."""
    if isinstance(value, ConfigField):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _version_tuple(version: str | None) -> tuple[int, ...]:
    """The numeric release of a version ("5.0.0rc1" → (5, 0, 0)); () for one that is not a version."""
    try:
        return Version(version or "").release
    except InvalidVersion:
        return ()


def _next_minor(version: str) -> str:
    parts = _version_tuple(version)
    if len(parts) >= 2:
        return f"{parts[0]}.{parts[1] + 1}"
    return f"after {version}"


def _title_from_class(trainer_class: str | None, name: str) -> str:
    """'ServerDistillationTrainer' -> 'Server distillation' (used when KNOWLEDGE has no entry)."""
    base = (trainer_class or "").removesuffix("Trainer") or name
    words = [w for w in camel_words(base) if w]
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
        rewards = discovery.get("rewards")
        self.rewards: dict[str, dict[str, Any]] = dict(rewards) if isinstance(rewards, dict) else {}
        """TRL's shipped reward functions by name: module, required parameters, kwargs, factory."""

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
            "rewards": self.rewards,
        }

    def to_json(self, with_fields: bool = True) -> str:
        return json.dumps(self.to_dict(with_fields=with_fields), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Loading (cache or discovery subprocess)


def load_registry(refresh: bool = False, python: str = sys.executable, project: str | None = None) -> Registry:
    """The registry for the installed TRL: from the schema cache, else by discovery (10-30 s).

    The cache is keyed by the TRL and transformers versions this process sees in package metadata;
    `python` runs the discovery and should live in the same environment. `project`: another env's
    Python instead (a project's venv, read from a light cockpit: `--python`), whose versions key
    the cache and which runs the discovery. `refresh` rediscovers.
    """
    if project is not None:
        trl_version, tf_version = versions_of(project)
        python = project
    else:
        trl_version, tf_version = installed_versions()
    path = schema_cache_path(trl_version, tf_version)
    if not refresh:
        cached = read_cache(path)
        if cached is not None:
            return Registry(cached)
    with _discovery_lock(path):
        if not refresh:  # another process may have discovered while this one waited for the lock
            cached = read_cache(path)
            if cached is not None:
                return Registry(cached)
        return _discover(python, trl_version, tf_version)


@contextlib.contextmanager
def _discovery_lock(path: Path) -> Iterator[None]:
    """One discovery at a time per cache entry: the processes that start together on a cold cache
    (a TUI, a run's supervisor, the CLI) wait for the first one's cache instead of each importing
    TRL for 10-30 s. A cache folder that cannot hold a lock only costs the waiting."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path) + ".lock", timeout=DISCOVERY_LOCK_S)
        lock.acquire()
    except (OSError, Timeout):
        yield
        return
    try:
        yield
    finally:
        lock.release()


DISCOVERY_LOCK_S = 300.0
"""How long a process waits for another's discovery before running its own."""


def _discover(python: str, trl_version: str, tf_version: str) -> Registry:
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
