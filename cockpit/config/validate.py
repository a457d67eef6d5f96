"""Check a preset against the installed TRL before anything starts.

Everything a user can get wrong is caught here with one line naming the problem
and the fix: an unknown trainer or config key (with the close match), a value of
the wrong type, a missing model or data file, data without the trainer's
columns, a trainer the installed TRL lacks, an output dir that already holds
checkpoints. Every problem is reported at once (`ValidationError.problems`, each
with the field it is about), so a preset with three typos needs one try, not
three. Nothing here imports torch or trl: the config schema comes from the
registry's cache.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.config import datasets as ds
from cockpit.config import hub
from cockpit.config.migrate import key_problems, value_problem
from cockpit.config.presets import Preset, resolve_demo_refs, reward_file_ref, uses_demo_assets
from cockpit.config.rewards import RewardNeeds, cockpit_reward_names, needed_columns, reward_needs
from cockpit.errors import CockpitError
from cockpit.run.folder import list_checkpoints
from cockpit.run.section import PRESET_KEYS, section_problems
from cockpit.trainers.knowledge import MODEL_ROLES
from cockpit.trainers.registry import ConfigField, Registry, TrainerSpec, known_config_keys, load_registry, suggest_key

# Keys the TRL CLI scripts take beyond the config dataclasses (DatasetMixtureConfig and the
# GRPO/RLOO script arguments); TRL's own parser accepts them in a `--config` YAML.
SCRIPT_EXTRA_KEYS = {"datasets", "streaming", "test_split_size", "reward_model_name_or_path",
                     "reward_funcs"}

INT_LIMIT = 2**63 - 1
"""The largest integer a TRL/transformers integer field can hold (they end up in int64 tensors)."""
SHOWN_CHARS = 60
"""How much of a refused value a message quotes: a 120 KB --set value is named, not echoed."""
NON_NEGATIVE = frozenset({"learning_rate", "warmup_steps", "warmup_ratio", "weight_decay", "num_train_epochs",
                          "max_grad_norm"})
"""Numbers a trainer takes that are never below 0 (TRL accepts some, and trains on NaN)."""
MAX_ROWS_AT_ONCE = 1 << 20
"""Batch sizes and accumulation counts are whole numbers from 1 to this: no device holds more rows at
once, and a bigger one only fails after the model has loaded."""


def _shown(value: Any) -> str:
    """A value as a message quotes it: its repr, cut at SHOWN_CHARS with its length said."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}… ({len(text):,} characters)"


def _range_problem(name: str, value: Any) -> str | None:
    """A number no training can use: not finite, below 0 where nothing may be, a batch of no rows
    or of more than MAX_ROWS_AT_ONCE."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be a finite number (got {value})"
    if name in NON_NEGATIVE and value < 0:
        return f"{name} must be 0 or more (got {_shown(value)})"
    if (name.endswith("_batch_size") or name == "gradient_accumulation_steps") \
            and not 1 <= value <= MAX_ROWS_AT_ONCE:
        return f"{name} must be a whole number from 1 to {MAX_ROWS_AT_ONCE:,} (got {_shown(value)})"
    return None

_BUILTIN_REWARDS_HINT = "a TRL reward name, a dotted import path or path/file.py:function"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a preset: the key it is about (a flat TRL key, `cockpit.models.x`,
    `trainer`), or None when no single key is, and the line naming the problem and the fix."""

    field: str | None
    message: str


class ValidationError(CockpitError):
    """Every problem `validate` found; the message is one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(p.message for p in self.problems))


class _Problems:
    """Collects problems; `check(field)` turns a CockpitError raised inside into one."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def add(self, field_name: str | None, message: str) -> None:
        self.found.append(Problem(field_name, message))

    @contextmanager
    def check(self, field_name: str | None) -> Iterator[None]:
        try:
            yield
        except ValidationError as exc:
            self.found.extend(exc.problems)
        except CockpitError as exc:
            self.add(field_name, str(exc))


@dataclass
class Plan:
    """A validated run: the resolved preset, the trainer, and what to warn about."""

    preset: Preset
    spec: TrainerSpec
    warnings: list[str] = field(default_factory=list)


def _kinds(f: ConfigField) -> tuple[str, ...]:
    """The JSON kinds a field takes, in the order its type names them: as discovery read them from
    the real type, else (an annotation TRL left a string) read from the readable type."""
    if f.kinds is not None:
        return f.kinds
    t = f.type.replace(" ", "")
    names = {"bool": "bool", "int": "int", "float": "float", "str": "str", "None": "null"}
    return tuple(names.get(part.split("[")[0], part) for part in t.split("|")) if t else ()


def _int_written_as_float(f: ConfigField, value: Any) -> bool:
    """1e3 for an integer field: YAML 1.2 writes a thousand so, and the trainer gets 1000."""
    kinds = _kinds(f)
    return isinstance(value, float) and value.is_integer() and bool(kinds) and kinds[0] == "int" \
        and "float" not in kinds


def _type_problem(name: str, f: ConfigField, value: Any) -> str | None:
    """A value that cannot be what the field's type says (its first kind decides: a bool, an int
    or a number), or None."""
    if value is None:
        return None  # null means "TRL's default" for every field
    kinds = _kinds(f)
    base = kinds[0] if kinds else None
    if base == "bool" and not isinstance(value, bool):
        return f"{name} must be true or false (got {_shown(value)})"
    if base == "int" and isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT_LIMIT:
        return f"{name} must be an integer of at most {INT_LIMIT:,} (got {_shown(value)})"
    if base == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        if _int_written_as_float(f, value):
            if abs(value) > INT_LIMIT:  # 1e30 is a whole number no trainer can count to
                return f"{name} must be an integer of at most {INT_LIMIT:,} (got {_shown(value)})"
            return None
        if "float" in kinds and isinstance(value, float):
            return None
        if "str" in kinds and isinstance(value, str):
            return None
        return f"{name} must be an integer (got {_shown(value)})"
    if base == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        if "str" in kinds and isinstance(value, str):
            return None
        return f"{name} must be a number (got {_shown(value)})"
    return None


def _check_choices(name: str, choices: Any, value: Any) -> str | None:
    if not choices or value is None or isinstance(value, (list, dict)):
        return None
    allowed = [str(c) for c in choices]
    if str(value) not in allowed:
        return f"{name} must be one of {', '.join(allowed)} (got {_shown(value)})"
    return None


@dataclass(frozen=True)
class DemoAssets:
    """A preset whose `demo:` references are paths now, and what the runner builds later."""

    preset: Preset
    built_later: tuple[str, ...] = ()
    """Folders the runner builds on first use (the demo models): a model path under one may not
    exist yet, and is not checked."""

    def model_checked(self, ref: str) -> bool:
        return not ref.startswith(self.built_later or ("\0",))


def demo_assets(preset: Preset, demo_root: Path | None = None) -> DemoAssets:
    """The preset's `demo:` references resolved under the demo folder (`demo_root`, else the cache's),
    the demo datasets written there so the data check can read them; a preset that uses no demo
    asset comes back as a copy, untouched."""
    if not uses_demo_assets(preset):
        return DemoAssets(preset.copy())
    from cockpit import demo

    root = demo_root or demo.demo_dir()
    demo.ensure_datasets(root)
    return DemoAssets(resolve_demo_refs(preset, root), (str(root / "models"),))


def validate(preset: Preset, registry: Registry | None = None, *,
             demo_root: Path | None = None, resuming: bool = False) -> Plan:
    """The preset checked against the installed TRL; `ValidationError` lists every problem.

    `resuming`: the preset of a run being resumed, whose output_dir holds checkpoints by design.
    """
    registry = registry or load_registry()
    try:
        spec = registry.get(preset.trainer)
    except CockpitError as exc:
        raise ValidationError([Problem("trainer", str(exc))]) from None
    problems = _Problems()
    warnings: list[str] = []
    lacking = trainer_unavailable(spec, has_gpu())
    if lacking:
        problems.add("trainer", f"trainer '{spec.name}' {lacking} — run it on a GPU box or pick another trainer")
    given_data = str(preset.trl.get("dataset_name") or "")
    assets = demo_assets(preset, demo_root)
    preset = assets.preset
    _check_trl_keys(preset, spec, problems)
    _check_cockpit_keys(preset, problems)
    with problems.check("chat_template_path"):
        _resolve_template(preset)
    models = _check_models(preset, spec, assets, problems, warnings)
    reward_columns = _check_rewards(preset, spec, registry, models, problems, warnings) \
        if "reward_funcs" in spec.extra_models else {}
    _check_cockpit_config(preset, problems, warnings)
    with problems.check("dataset_name"):
        _check_data(preset, spec, reward_columns, shown_as=given_data)
    if not resuming:
        _check_output_dir(preset, problems)
    if problems.found:
        raise ValidationError(problems.found)
    return Plan(preset=preset, spec=spec, warnings=warnings)


def _check_trl_keys(preset: Preset, spec: TrainerSpec, problems: _Problems) -> None:
    """Each TRL key: known to the trainer (or a rename said with what it became, or a close match
    said), its value of the field's type, one of its choices, in range. A whole number written as
    a float (1e3) becomes an int in the preset."""
    known = known_config_keys(spec) | SCRIPT_EXTRA_KEYS
    fields_by_name = {f.name: f for f in spec.fields}
    for group in (spec.model_config, spec.script_args):
        for f in group:
            fields_by_name.setdefault(f.name, f)
    source = str(preset.source) if preset.source else None
    renamed, _ = key_problems(preset.trl, known, source)
    for problem in renamed:  # keys older TRL / transformers took: named with what they became
        problems.add(problem.key, problem.message)
    renamed_keys = {p.key for p in renamed}
    project_only = []
    for key, value in preset.trl.items():
        if key in renamed_keys:
            continue
        if key not in known:
            close = suggest_key(spec, key)
            if close:
                problems.add(key, f"unknown config key '{key}' for {spec.name} — did you mean '{close}'?")
            else:
                project_only.append(key)
            continue
        moved = value_problem(key, value, source)  # a value TRL renamed: say what it became
        if moved:
            problems.add(key, moved)
            continue
        known_field = fields_by_name.get(key)
        if known_field is not None:
            wrong = _type_problem(key, known_field, value) or _check_choices(key, known_field.choices, value) \
                or _range_problem(key, value)
            if wrong:
                problems.add(key, f"{wrong} — fix it in the preset or with --set {key}=...")
            elif _int_written_as_float(known_field, value):
                preset.trl[key] = int(value)
    if project_only:
        where = preset.source or "the config"
        problems.add(project_only[0], f"unknown config key{'s' if len(project_only) > 1 else ''} "
                     f"{', '.join(repr(k) for k in project_only)} for {spec.name} — not an option of "
                     f"{spec.config_class}, the script arguments or the model config (`cockpit fields {spec.name}` "
                     f"lists them); if this config belongs to a project's own script, run that script under "
                     f"the cockpit: cockpit run -- python YOUR_SCRIPT.py --config {where}")


def _check_cockpit_keys(preset: Preset, problems: _Problems) -> None:
    """The `cockpit:` section against its typed model (`run/section.py`): unknown keys, with the
    close match, and values of the wrong type, every one at once."""
    for key, line in section_problems(preset.cockpit, keys=PRESET_KEYS):
        problems.add(key, line)


def _check_models(preset: Preset, spec: TrainerSpec, assets: DemoAssets, problems: _Problems,
                  warnings: list[str]) -> dict[str, Any]:
    """The model, the extra models by role (`cockpit.models`), the teacher and the reward model a
    trainer needs: each one there (a folder with a config, or a hub id in the cache). Returns
    `cockpit.models` ({} when it is not a mapping, which is said)."""
    def check_ref(what: str, ref: str) -> None:
        if assets.model_checked(ref):
            with problems.check(what):
                _check_model_path(what, ref)

    model = preset.trl.get("model_name_or_path")
    if not model:
        problems.add("model_name_or_path", "no model: set model_name_or_path (a local folder or "
                     "hub id) — e.g. --set model_name_or_path=Qwen/Qwen2.5-0.5B-Instruct")
    else:
        check_ref("model_name_or_path", str(model))
    if preset.trl.get("trust_remote_code"):
        warnings.append("trust_remote_code is on: the model's own Python code will run")
    models = preset.cockpit.get("models") or {}
    if not isinstance(models, dict):
        problems.add("cockpit.models", "cockpit.models must be a mapping like {reward_model: path}")
        models = {}
    for key, ref in models.items():
        if key not in MODEL_ROLES:
            problems.add(f"cockpit.models.{key}", f"cockpit.models.{key}: unknown model role — use "
                         f"{', '.join(MODEL_ROLES[:-1])} or {MODEL_ROLES[-1]}")
        elif ref:
            check_ref(f"cockpit.models.{key}", str(ref))
    if "teacher_model" in spec.extra_models:
        teacher = preset.trl.get("teacher_model_name_or_path") or models.get("teacher_model")
        if not teacher:
            problems.add("teacher_model_name_or_path", f"{spec.name} needs a teacher model — set "
                         "teacher_model_name_or_path (or cockpit.models.teacher_model)")
        else:
            check_ref("teacher model", str(teacher))
    has_scorer = models.get("reward_model") or preset.trl.get("reward_model_path")
    if "value_model" in spec.extra_models and not has_scorer:
        problems.add("cockpit.models.reward_model", f"{spec.name} needs a reward model — set "
                     "cockpit.models.reward_model (a sequence-classification model); the value "
                     "model defaults to it")
    return models


def _check_rewards(preset: Preset, spec: TrainerSpec, registry: Registry, models: dict[str, Any],
                   problems: _Problems, warnings: list[str]) -> dict[str, list[str]]:
    """The reward functions of a trainer that takes them: given (or a reward model), each one
    found, its file there; returns the dataset columns they read."""
    funcs: list[Any] = []
    with problems.check("reward_funcs"):
        funcs = _reward_funcs(preset)
        if not funcs and not preset.trl.get("reward_model_name_or_path") \
                and not models.get("reward_model"):
            raise CockpitError(f"{spec.name} needs rewards — set reward_funcs, "
                               f"cockpit.reward_funcs ({_BUILTIN_REWARDS_HINT}) or "
                               "reward_model_name_or_path")
    for fn in funcs:
        file_ref = reward_file_ref(str(fn))
        if file_ref is not None:
            if not file_ref[0].is_file():
                problems.add("reward_funcs", f"reward function {fn}: no file {file_ref[0]} — "
                             "give path/file.py:function")
                continue
            warnings.append(f"reward function code will run from {fn}")
        needs = reward_needs(str(fn), registry.rewards)
        if needs is None:
            continue
        if not needs.found:
            problems.add("reward_funcs", _unknown_reward(str(fn), needs, registry))
        elif needs.factory:
            problems.add("reward_funcs", f"reward function {fn} builds a reward function (it takes no "
                         "completions) — call it in a file of yours and name that: path/file.py:function")
    return needed_columns(funcs, registry.rewards)


def _check_cockpit_config(preset: Preset, problems: _Problems, warnings: list[str]) -> None:
    """The cockpit's own config, through its typed models: the launcher (and Slurm being there for
    one), the alert rules and notify targets; a broken ~/.config/cockpit/alerts.yaml is a warning."""
    from cockpit.alerts.alerter import user_alerts
    from cockpit.alerts.notify import parse_notify
    from cockpit.alerts.rules import parse_rules
    from cockpit.config.launcher import check as check_launcher
    from cockpit.config.launcher import slurm_problem

    with problems.check("cockpit.launcher"):
        no_slurm = slurm_problem(check_launcher(preset.cockpit.get("launcher")))
        if no_slurm:
            raise CockpitError(no_slurm)
    with problems.check("cockpit.alerts"):
        parse_rules(preset.cockpit.get("alerts"))
    with problems.check("cockpit.notify"):
        parse_notify(preset.cockpit.get("notify"))
    user_alerts(warnings)  # a broken ~/.config/cockpit/alerts.yaml is named, not ignored


def _check_output_dir(preset: Preset, problems: _Problems) -> None:
    out = preset.trl.get("output_dir")
    if not out:
        return
    out_path = Path(str(out)).expanduser()
    if list_checkpoints(out_path):
        problems.add("output_dir", f"output_dir {out_path} already holds checkpoints — "
                     "continue it with `cockpit resume RUN`, or pick a new output_dir")


TEMPLATE_SUFFIXES = (".jinja", ".jinja2", ".j2", ".txt", ".tmpl")


def _resolve_template(preset: Preset) -> None:
    """`chat_template_path` is a template file or a tokenizer's folder or Hub id. A relative file
    path means the preset's folder (the runner runs elsewhere, and TRL would take it for a Hub id):
    it is made absolute in the validated preset. A file path that names nothing is refused."""
    ref = preset.trl.get("chat_template_path")
    if not isinstance(ref, str) or not ref.strip():
        return
    path = Path(ref).expanduser()
    base = preset.source.parent if preset.source is not None else Path.cwd()
    candidates = [path] if path.is_absolute() else [base / path, Path.cwd() / path]
    found = next((c for c in candidates if c.exists()), None)
    if found is not None:
        preset.trl["chat_template_path"] = str(found.absolute())
        return
    looks_like_file = path.suffix.lower() in TEMPLATE_SUFFIXES or ref.startswith((".", "/", "~")) \
        or ref.count("/") > 1
    if looks_like_file:
        raise CockpitError(f"chat_template_path {ref}: no such file (looked in {candidates[0].parent}) — give "
                           "the template file's path, relative to the preset or absolute")


def has_gpu() -> bool:
    """An NVIDIA device node is there (no torch import needed to know)."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def trainer_unavailable(spec: TrainerSpec, gpu: bool) -> str | None:
    """Why this trainer cannot run on this machine, or None (the trainer picker greys it out)."""
    if not spec.available:
        return spec.missing_hint or f"{spec.name} is not available in the installed TRL"
    if spec.needs and not gpu:
        return f"needs {spec.needs}, which this machine lacks"
    return None


def cannot_run_here(preset: Preset, registry: Registry, gpu: bool) -> str | None:
    """Why a preset cannot start on this machine whatever its other values are: its trainer is
    not in the installed TRL or needs a GPU, or a model or dataset it names is on the hub while
    the hub is offline and it is not cached. None when it can (validation still checks the
    rest). Home greys such presets out with this line, as the trainer picker does trainers."""
    try:
        spec = registry.get(preset.trainer)
    except CockpitError as exc:
        return str(exc)
    lacking = trainer_unavailable(spec, gpu)
    if lacking:
        return f"{spec.name} {lacking}"
    models = preset.cockpit.get("models")
    refs = [("model_name_or_path", preset.trl.get("model_name_or_path"))]
    refs += [(f"cockpit.models.{k}", v) for k, v in (models.items() if isinstance(models, dict) else ())]
    for what, ref in refs:
        if isinstance(ref, str) and (problem := hub.model_problem(what, ref)):
            return problem
    data = preset.trl.get("dataset_name")
    return hub.dataset_problem(data) if isinstance(data, str) else None


def _check_model_path(what: str, ref: str) -> None:
    p = Path(ref).expanduser()
    if p.exists():
        if p.is_dir() and not (p / "config.json").exists() and not (p / "adapter_config.json").exists():
            raise CockpitError(f"{what} {ref}: the folder has no config.json — point it at a saved "
                               "model folder (save_pretrained output)")
        return
    if ref.startswith((".", "/", "~")) or ref.count("/") > 1:
        raise CockpitError(f"{what} {ref}: no such folder — check the path, or give a hub id "
                           "like Qwen/Qwen2.5-0.5B")
    not_here = hub.model_problem(what, ref)
    if not_here:
        raise CockpitError(not_here)


def _reward_funcs(preset: Preset) -> list[Any]:
    funcs: list[Any] = []
    for source in (preset.trl.get("reward_funcs"), preset.cockpit.get("reward_funcs")):
        if source is None:
            continue
        if isinstance(source, str):
            source = [source]
        if not isinstance(source, list):
            raise CockpitError("reward_funcs must be a list of names — e.g. [accuracy_reward]")
        funcs.extend(source)
    return funcs


def _unknown_reward(ref: str, needs: RewardNeeds, registry: Registry) -> str:
    if needs.where:
        return f"reward function {ref}: {needs.where} has no function '{ref.rpartition(':')[2]}' — check the name"
    names = [n for n, e in registry.rewards.items() if not e.get("factory")] + cockpit_reward_names()
    close = difflib.get_close_matches(ref, names, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (f"reward function '{ref}' not found — {hint}TRL's and cockpit's are {', '.join(sorted(names))}; "
            "or give a dotted import path or path/file.py:function")


def _check_data(preset: Preset, spec: TrainerSpec, reward_columns: dict[str, list[str]] | None = None,
                shown_as: str | None = None) -> None:
    name = preset.trl.get("dataset_name")
    if preset.trl.get("datasets") or preset.trl.get("dataset_mixture"):
        return  # TRL's dataset mixture: checked by TRL itself in the runner (an old one is named above)
    if not name:
        raise CockpitError("no data: set dataset_name (a hub id, a local folder or a "
                           ".jsonl/.json/.parquet/.csv file)")
    dcfg = preset.cockpit.get("dataset") or {}
    if not isinstance(dcfg, dict):
        raise CockpitError("cockpit.dataset must be a mapping (split, eval_split, columns)")
    renames = dcfg.get("columns") or {}
    if not isinstance(renames, dict):
        raise CockpitError("cockpit.dataset.columns must map old names to new, e.g. {question: prompt}")
    split = str(dcfg.get("split") or preset.trl.get("dataset_train_split") or "train")
    found = ds.inspect(str(name), config=preset.trl.get("dataset_config"), split=split, renames=renames,
                       formats=spec.data_formats, trainer=spec.name, needs=reward_columns,
                       shown_as=shown_as or None)
    if found.problem:
        raise CockpitError(found.problem)
