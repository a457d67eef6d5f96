"""Discover the trainers of the installed TRL and print them as one JSON object.

Run as `python -m cockpit.runner.discover`. It lives in the runner layer because it imports
trl (10-30 s cold); `cockpit.trainers.registry` runs it in a subprocess once per TRL/transformers
version pair and caches the result, so the UI and the CLI never import trl themselves.

Nothing is hand-listed here: stable trainers are the `*Trainer` classes `trl` exports, experimental
ones are the `trl.experimental.<x>` submodules that hold a Trainer class. Per-trainer facts that
cannot be introspected (data columns, extra models, ...) live in `cockpit.trainers.knowledge`.
What each config field says (type, default, choices, help) is read by `cockpit.runner.config_fields`.

stdout carries exactly one JSON document; everything TRL prints while importing goes to stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import sys
import time
import typing
import warnings
from typing import Any, TypeGuard

from cockpit.errors import failure
from cockpit.runner.config_fields import describe_fields
from cockpit.trainers import camel_words

SCHEMA = 3

# Experimental submodules that are known not to hold trainers are still imported (a new TRL may
# add a trainer there); a module simply contributes nothing when it has no Trainer class.


def snake_case(prefix: str) -> str:
    """'SFT' -> 'sft', 'OnlineDPO' -> 'online_dpo', 'RLOO' -> 'rloo', 'AsyncGRPO' -> 'async_grpo'."""
    return "_".join(camel_words(prefix)).lower()


# ---------------------------------------------------------------------------------------------
# Finding trainers


def _is_config(obj: Any, training_args_cls: type) -> TypeGuard[type]:
    return (
        inspect.isclass(obj)
        and dataclasses.is_dataclass(obj)
        and issubclass(obj, training_args_cls)
        and obj is not training_args_cls
    )


def _config_from_signature(trainer_cls: type, training_args_cls: type) -> type | None:
    """The config class a trainer's `args` parameter is annotated with (walks the MRO, since
    e.g. the BEMA DPOTrainer takes *args and inherits DPOTrainer's signature)."""
    for klass in trainer_cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            param = inspect.signature(init).parameters.get("args")
        except (TypeError, ValueError):
            continue
        if param is None or param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        ann = param.annotation
        if ann is inspect.Parameter.empty:
            continue
        candidates: list[Any] = []
        if isinstance(ann, str):
            module = sys.modules.get(klass.__module__)
            for name in re.findall(r"[A-Za-z_]\w*", ann):
                candidates.append(getattr(module, name, None))
        else:
            candidates = list(typing.get_args(ann)) or [ann]
        for cand in candidates:
            if _is_config(cand, training_args_cls):
                return cand
        return None
    return None


def _init_params(trainer_cls: type) -> list[str]:
    """Keyword parameters the trainer's constructor takes (first __init__ in the MRO that names
    them: the BEMA DPOTrainer forwards *args/**kwargs to DPOTrainer)."""
    for klass in trainer_cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
        if names:
            return names
    return []


def _importable_from(cls: type, modules: list[str]) -> str:
    """The first of `modules` that exports `cls` under its name, else where it is defined."""
    for modname in modules:
        mod = sys.modules.get(modname)
        if mod is not None and getattr(mod, cls.__name__, None) is cls:
            return modname
    return cls.__module__


def _trainer_entry(
    name: str,
    module: str,
    trainer_cls: type,
    config_cls: type | None,
    experimental: bool,
    training_arg_names: frozenset[str],
    alias_of: str | None = None,
) -> dict:
    entry: dict[str, Any] = {
        "name": name,
        "module": module,
        "trainer_class": trainer_cls.__name__,
        "config_class": config_cls.__name__ if config_cls else None,
        "config_module": _importable_from(config_cls, [module, "trl"]) if config_cls else None,
        "experimental": experimental,
        "alias_of": alias_of,
        "import_error": None,
        "init_params": _init_params(trainer_cls),
        "fields": [],
    }
    if config_cls is None:
        entry["import_error"] = f"no config class found for {trainer_cls.__name__}"
        return entry
    try:
        entry["fields"] = describe_fields(config_cls, training_arg_names)
    except Exception as exc:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
        entry["import_error"] = failure(exc, f"reading {config_cls.__name__} fields failed")
    return entry


def _error_text(exc: BaseException) -> str:
    return failure(exc)


def discover_stable(trl: Any, training_args_cls: type, training_arg_names: frozenset[str]) -> list[dict]:
    """`*Trainer` classes exported by `trl`, paired with their `*Config`."""
    exported = sorted(set(getattr(trl, "__all__", None) or dir(trl)) | set(dir(trl)))
    out: list[dict] = []
    for attr in exported:
        if not attr.endswith("Trainer") or attr == "Trainer" or attr.startswith("_"):
            continue
        prefix = attr[: -len("Trainer")]
        name = snake_case(prefix)
        try:
            trainer_cls = getattr(trl, attr)
            if not inspect.isclass(trainer_cls):
                continue
            config_cls = getattr(trl, prefix + "Config", None) if prefix + "Config" in exported else None
            if not _is_config(config_cls, training_args_cls):
                config_cls = _config_from_signature(trainer_cls, training_args_cls)
        except Exception as exc:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
            out.append(_failed_entry(name, "trl", experimental=False, exc=exc, trainer_class=attr))
            continue
        out.append(_trainer_entry(name, "trl", trainer_cls, config_cls, False, training_arg_names))
    return out


def _failed_entry(name: str, module: str, *, experimental: bool, exc: BaseException, trainer_class: str | None) -> dict:
    return {
        "name": name,
        "module": module,
        "trainer_class": trainer_class,
        "config_class": None,
        "config_module": None,
        "experimental": experimental,
        "alias_of": None,
        "import_error": _error_text(exc),
        "init_params": [],
        "fields": [],
    }


def discover_experimental(
    stable: list[dict], training_args_cls: type, training_arg_names: frozenset[str]
) -> list[dict]:
    """One trainer per `trl.experimental.<x>` submodule holding a Trainer class, named `<x>`."""
    try:
        import trl.experimental as experimental
    except Exception as exc:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
        return [_failed_entry("experimental", "trl.experimental", experimental=True, exc=exc, trainer_class=None)]
    import trl

    stable_classes = {}
    for entry in stable:
        cls = getattr(trl, entry["trainer_class"] or "", None)
        if inspect.isclass(cls):
            stable_classes[entry["name"]] = cls

    out: list[dict] = []
    for info in sorted(pkgutil.iter_modules(experimental.__path__), key=lambda m: m.name):
        modname = f"trl.experimental.{info.name}"
        if info.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module(modname)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            out.append(_failed_entry(info.name, modname, experimental=True, exc=exc, trainer_class=None))
            continue
        try:
            names = list(getattr(mod, "__all__", None) or dir(mod))
            trainers = []
            for attr in names:
                if not attr.endswith("Trainer") or attr.startswith("_"):
                    continue
                obj = getattr(mod, attr, None)
                if inspect.isclass(obj) and obj.__module__.startswith("trl"):
                    trainers.append(obj)
            if not trainers:
                continue  # a helper module (callbacks, env adapters, utils)
            found = [getattr(mod, a, None) for a in names if a.endswith("Config")]
            configs = [c for c in found if _is_config(c, training_args_cls)]
            for trainer_cls in trainers:
                prefix = trainer_cls.__name__[: -len("Trainer")]
                config_cls = next((c for c in configs if c.__name__ == prefix + "Config"), None)
                if config_cls is None:
                    config_cls = _config_from_signature(trainer_cls, training_args_cls)
                if config_cls is None and len(configs) == 1:
                    config_cls = configs[0]
                # The module name is the trainer name; a second trainer in one module gets its own.
                name = info.name if len(trainers) == 1 else f"{info.name}_{snake_case(prefix)}"
                if len(trainers) > 1 and snake_case(prefix) == info.name:
                    name = info.name
                # `trl.experimental.kto` / `.distillation` re-export the stable classes as
                # deprecated subclasses: same name, same base -> an alias, not a second trainer.
                alias_of = None
                base = stable_classes.get(name)
                if base is not None and issubclass(trainer_cls, base):
                    alias_of = name
                out.append(
                    _trainer_entry(name, modname, trainer_cls, config_cls, True, training_arg_names, alias_of)
                )
        except Exception as exc:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
            out.append(_failed_entry(info.name, modname, experimental=True, exc=exc, trainer_class=None))
    return out


def discover_cli(trainers: list[dict], training_arg_names: frozenset[str]) -> None:
    """Mark trainers that `trl <name>` can run, with the extra script arguments its YAML takes.

    `trl/scripts/<name>.py` exposing `make_parser()` is what the TRL CLI runs for `trl <name>`.
    """
    import trl

    base_script_args = getattr(trl, "ScriptArguments", None)
    for entry in trainers:
        entry.setdefault("cli_command", None)
        entry.setdefault("cli_fields", [])
        if entry["experimental"] or entry["import_error"]:
            continue
        modname = f"trl.scripts.{entry['name']}"
        try:
            if importlib.util.find_spec(modname) is None:
                continue
            mod = importlib.import_module(modname)
            make_parser = getattr(mod, "make_parser", None)
            if make_parser is None:
                continue
            parser = make_parser()
            entry["cli_command"] = entry["name"]
            known = {f["name"] for f in entry["fields"]}
            if base_script_args is not None:
                known |= {f.name for f in dataclasses.fields(base_script_args)}
            extra: list[dict] = []
            for dtype in getattr(parser, "dataclass_types", []):
                if base_script_args is None or dtype is base_script_args or not issubclass(dtype, base_script_args):
                    continue
                described = describe_fields(dtype, training_arg_names, group="ScriptArguments")
                extra += [f for f in described if f["name"] not in known]
            entry["cli_fields"] = extra
        except Exception as exc:  # noqa: BLE001 - the CLI is a convenience; its absence is not an error
            print(f"cockpit discover: trl {entry['name']} CLI not inspected: {_error_text(exc)}", file=sys.stderr)


def discover_rewards() -> dict[str, dict]:
    """TRL's shipped reward functions (`trl.rewards`), by name, with the parameters each needs:
    those without a default (the dataset columns it reads, beside what the trainer passes itself),
    whether it takes **kwargs, and whether it is a factory to call first (`get_*`: no `completions`)."""
    try:
        rewards = importlib.import_module("trl.rewards")
    except Exception:  # noqa: BLE001 - an older TRL without it: nothing to record
        return {}
    out: dict[str, dict] = {}
    for name in getattr(rewards, "__all__", None) or dir(rewards):
        fn = getattr(rewards, name, None)
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        named = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        out[name] = {
            "module": fn.__module__,
            "required": [p.name for p in params
                         if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)],
            "kwargs": any(p.kind is p.VAR_KEYWORD for p in params),
            "factory": "completions" not in named,
        }
    return out


def discover() -> dict:
    """Everything cockpit needs to know about the installed TRL, as a JSON-able dict."""
    started = time.perf_counter()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    warnings.simplefilter("ignore")

    import transformers
    import trl

    training_args_cls = transformers.TrainingArguments
    training_arg_names = frozenset(f.name for f in dataclasses.fields(training_args_cls))

    stable = discover_stable(trl, training_args_cls, training_arg_names)
    experimental = discover_experimental(stable, training_args_cls, training_arg_names)
    trainers = stable + experimental
    discover_cli(trainers, training_arg_names)

    def _fields_of(attr: str, group: str) -> list[dict]:
        cls = getattr(trl, attr, None)
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            return []
        return describe_fields(cls, training_arg_names, group=group)

    return {
        "schema": SCHEMA,
        "trl_version": getattr(trl, "__version__", None),
        "transformers_version": getattr(transformers, "__version__", None),
        "python": sys.version.split()[0],
        "trainers": trainers,
        "script_args": _fields_of("ScriptArguments", "ScriptArguments"),
        "model_config": _fields_of("ModelConfig", "ModelConfig"),
        "dataset_mixture": _fields_of("DatasetMixtureConfig", "DatasetMixtureConfig"),
        "rewards": discover_rewards(),
        "discovery_seconds": round(time.perf_counter() - started, 2),
    }


@contextlib.contextmanager
def _stdout_to_stderr():
    """Point fd 1 and sys.stdout at stderr (C extensions write to the fd, Python to sys.stdout)."""
    sys.stdout.flush()
    saved_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved_fd, 1)
        os.close(saved_fd)


def main() -> int:
    try:
        # TRL and friends print banners and deprecation notes while importing: keep them off stdout.
        with _stdout_to_stderr():
            result = discover()
        text = json.dumps(result, ensure_ascii=False)
    except Exception as exc:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
        print(f"cockpit discover failed: {_error_text(exc)}", file=sys.stderr)
        return 1
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
