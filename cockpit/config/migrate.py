"""Configs written for older TRL / transformers, or for a project's own script.

Public recipes (alignment-handbook, open-r1, TRL's examples) carry keys the installed libraries
renamed or removed. `RENAMED` is that knowledge as data: old key → what it became, and why. A key
is reported only when the installed schema does not know it, and a rename only when the installed
schema knows its new name, so the table stays honest as TRL moves.

`migrate` writes a corrected copy for one of two readers (`--for`):

- `trl-cli`: TRL's own `trl <cmd> --config` and cockpit presets. Renamed keys renamed, an inline
  `chat_template` moved to a file next to the copy (`chat_template_path`, written absolute: TRL
  takes a relative one for a Hub id), alignment-handbook's `dataset_mixture` turned into TRL's own
  `datasets:` list; what it cannot map stays in the copy and is named.
- `script`: a project's own script (alignment-handbook, open-r1), which reads keys of its own
  (`dataset_mixture`, `chat_template`, `dataset_prompt_column`, ...). Only what TRL or transformers
  renamed is renamed; the script's keys are left alone.

A config holding keys only a project's script reads is for `script`, otherwise `trl-cli`
(`choose_target`); the CLI says which, and why.

`VALUE_RENAMED` is the same knowledge for values TRL renamed (`packing_strategy: ffd` → `bfd`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Renamed:
    new: str | None
    """The key it became; None when it was removed with nothing to replace it."""
    why: str
    values: tuple[tuple[Any, Any], ...] = ()
    """Value mapping for keys whose meaning moved too (use_flash_attention_2: true → flash_attention_2)."""
    project: bool = False
    """A key of a project's own script (alignment-handbook's), never TRL's: mapped onto TRL's CLI
    for `trl-cli`, left alone for `script`, whose own code reads it."""


RENAMED: dict[str, Renamed] = {
    "torch_dtype": Renamed("dtype", "transformers 5 renamed it"),
    "max_seq_length": Renamed("max_length", "TRL renamed it"),
    "evaluation_strategy": Renamed("eval_strategy", "transformers renamed it"),
    "use_flash_attention_2": Renamed("attn_implementation", "transformers replaced it",
                                     values=((True, "flash_attention_2"), (False, None))),
    "warmup_ratio": Renamed("warmup_steps",
                            "transformers 5 folded it into warmup_steps, where a float below 1 is a ratio"),
    "no_cuda": Renamed("use_cpu", "transformers renamed it"),
    "per_gpu_train_batch_size": Renamed("per_device_train_batch_size", "transformers renamed it"),
    "per_gpu_eval_batch_size": Renamed("per_device_eval_batch_size", "transformers renamed it"),
    "push_to_hub_token": Renamed("hub_token", "transformers renamed it"),
    "chat_template": Renamed("chat_template_path", "TRL reads the template from a file", project=True),
    "dataset_mixture": Renamed("datasets", "TRL has its own dataset mixture, a `datasets:` list", project=True),
    "overwrite_output_dir": Renamed(None, "transformers 5 removed it; cockpit refuses an output_dir that "
                                          "already holds checkpoints, so pick a fresh one or resume"),
    "logging_dir": Renamed(None, "transformers 5 removed it; trackers log under output_dir"),
    "save_safetensors": Renamed(None, "transformers 5 removed it; weights are always safetensors"),
    "fp16_backend": Renamed(None, "transformers removed it"),
    "half_precision_backend": Renamed(None, "transformers 5 removed it"),
    "use_mps_device": Renamed(None, "transformers removed it; MPS is picked by itself"),
    "tpu_num_cores": Renamed(None, "transformers 5 removed it"),
    "max_prompt_length": Renamed(None, "the installed TRL removed it from this trainer's config; max_length "
                                       "bounds prompt + completion"),
}


@dataclass(frozen=True)
class ValueRenamed:
    old: Any
    new: Any
    why: str


VALUE_RENAMED: dict[str, tuple[ValueRenamed, ...]] = {
    # huggingface/trl#3696: the packing TRL 0.18-0.19 called first-fit decreasing was best-fit
    # decreasing all along; TRL 0.20 renamed it (smollm3's recipe still says ffd).
    "packing_strategy": (ValueRenamed("ffd", "bfd", "TRL 0.20 renamed it, the same best-fit-decreasing "
                                                    "packing named right ('ffd' was TRL 0.18-0.19's name)"),),
}

SCRIPT, TRL_CLI = "script", "trl-cli"


@dataclass
class KeyProblem:
    key: str
    message: str


def _copy_hint(source: str | None) -> str:
    """The command that writes a copy TRL's CLI takes. `--for trl-cli` is named: without it a
    config with a project's keys gets a copy for that project's script, which TRL refuses again."""
    return f"(`cockpit migrate {shlex.quote(source) if source else 'FILE'} --for trl-cli` writes a corrected copy)"


def key_problems(keys: Iterable[str], known: set[str], source: str | None = None
                 ) -> tuple[list[KeyProblem], list[str]]:
    """(problems with their fix for renamed and removed keys, the unknown keys left over), said
    for a config TRL's CLI (or a preset) reads; `source`: its file."""
    problems: list[KeyProblem] = []
    rest: list[str] = []
    for key in keys:
        if key in known:
            continue
        entry = RENAMED.get(key)
        if entry is None or (entry.new is not None and entry.new not in known):
            rest.append(key)
        elif entry.new is None:
            problems.append(KeyProblem(key, f"'{key}' is gone: {entry.why} — delete it {_copy_hint(source)}"))
        else:
            problems.append(KeyProblem(key, f"'{key}' is now '{entry.new}': {entry.why} — rename it "
                                            f"{_copy_hint(source)}"))
    return problems, rest


def renamed_value(key: str, value: Any) -> ValueRenamed | None:
    """The rename of a value TRL renamed (`packing_strategy: ffd`), or None."""
    if isinstance(value, (list, dict)):
        return None
    text = str(value).strip()
    return next((v for v in VALUE_RENAMED.get(key, ()) if str(v.old) == text), None)


def value_problem(key: str, value: Any, source: str | None = None) -> str | None:
    """One line for a value TRL renamed, with its fix; None when the value is not one."""
    entry = renamed_value(key, value)
    if entry is None:
        return None
    return f"{key}: '{entry.old}' is now '{entry.new}': {entry.why} — set {key}: {entry.new} {_copy_hint(source)}"


def project_keys(config: dict[str, Any], known: set[str]) -> list[str]:
    """Keys only a project's own script reads: neither the installed TRL's nor a library rename."""
    out = []
    for key in config:
        if key in known or key in ("trainer", "cockpit"):
            continue
        entry = RENAMED.get(key)
        if entry is None or entry.project or (entry.new is not None and entry.new not in known):
            out.append(key)
    return out


def choose_target(config: dict[str, Any], known: set[str]) -> tuple[str, str]:
    """(`script` or `trl-cli`, why): a config with keys only a project's script reads is for
    that script; one TRL's CLI can take whole is for the CLI."""
    mine = project_keys(config, known)
    if mine:
        return SCRIPT, (f"it holds {', '.join(mine[:4])}{', ...' if len(mine) > 4 else ''}, which a project's own "
                        "script reads and TRL's CLI does not")
    return TRL_CLI, "every key is one TRL's CLI takes (or a renamed one)"


@dataclass
class Migration:
    config: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    """One line per change made."""
    unmapped: dict[str, str] = field(default_factory=dict)
    """Key → why it could not be mapped."""
    files: dict[str, str] = field(default_factory=dict)
    """Extra files to write next to the copy: name → text."""
    kept: list[str] = field(default_factory=list)
    """A project script's own keys left as they were (`script`)."""


def _mixture(value: Any, m: Migration) -> list[dict[str, Any]] | None:
    """alignment-handbook's dataset_mixture ({datasets: [{id, config, split, columns, weight}], seed,
    test_split_size}) or its older dataset_mixer ({id: weight}) as TRL's `datasets:` list."""
    if isinstance(value, dict) and isinstance(value.get("datasets"), list):
        entries = value["datasets"]
    elif isinstance(value, dict):
        entries = [{"id": k, "weight": v} for k, v in value.items()]
    else:
        m.unmapped["dataset_mixture"] = "not a mapping cockpit knows"
        return None
    out = []
    weights = []
    for e in entries:
        if not isinstance(e, dict) or not (e.get("id") or e.get("path")):
            m.unmapped["dataset_mixture"] = f"an entry without an id: {e!r}"
            return None
        d = {"path": e.get("id") or e.get("path")}
        for old, new in (("config", "name"), ("name", "name"), ("split", "split"), ("columns", "columns"),
                         ("data_files", "data_files"), ("data_dir", "data_dir")):
            if e.get(old) is not None:
                d[new] = e[old]
        if e.get("weight") not in (None, 1, 1.0):
            weights.append(f"{d['path']}: {e['weight']}")
        out.append(d)
    if weights:
        m.unmapped["dataset_mixture.weight"] = (
            "weights keep that share of each dataset, while TRL's `fraction` normalises shares across the "
            f"mixture — set `fraction` by hand if you want it ({'; '.join(weights)})")
    if isinstance(value, dict) and value.get("seed") is not None:
        m.unmapped["dataset_mixture.seed"] = "TRL's mixture has no seed of its own — the run's `seed` applies"
    if isinstance(value, dict) and value.get("test_split_size") is not None:
        m.config["test_split_size"] = value["test_split_size"]
    return out


def migrate(config: dict[str, Any], known: set[str], *, template_name: str = "chat_template.jinja",
            template_dir: Path | None = None, target: str = TRL_CLI) -> Migration:
    """A copy of `config` for the installed libraries. `known`: every key the trainer's TRL YAML takes.
    `target`: `trl-cli` (TRL's CLI and cockpit presets) or `script` (a project's own script: its keys
    stay). `template_dir`: where the chat template file goes, so `chat_template_path` is absolute."""
    m = Migration(config={})
    for key, value in config.items():
        moved = renamed_value(key, value)
        if moved is not None:
            value = moved.new
            m.changed.append(f"{key}: {moved.old} → {moved.new} ({moved.why})")
        if key in known or key in ("trainer", "cockpit"):
            m.config[key] = value
            continue
        entry = RENAMED.get(key)
        if entry is not None and entry.project and target == SCRIPT:
            m.config[key] = value
            m.kept.append(key)
            continue
        if entry is None or (entry.new is not None and entry.new not in known):
            m.unmapped[key] = "not a key of the installed TRL or transformers (kept in the copy)"
            m.config[key] = value  # the project's own script may need it
            continue
        if entry.new is None:
            m.changed.append(f"removed {key} ({entry.why})")
        elif key == "chat_template":
            m.files[template_name] = str(value)
            where = str((template_dir / template_name).absolute()) if template_dir is not None else template_name
            m.config["chat_template_path"] = where
            m.changed.append(f"chat_template → {where} (chat_template_path)")
        elif key == "dataset_mixture":
            datasets = _mixture(value, m)
            if datasets is not None:
                m.config["datasets"] = datasets
                entries = f"{len(datasets)} entr{'y' if len(datasets) == 1 else 'ies'}"
                m.changed.append(f"dataset_mixture → datasets ({entries})")
        else:
            mapped = dict(entry.values).get(value, value) if entry.values else value
            if mapped is not None:
                m.config[entry.new] = mapped
            m.changed.append(f"{key} → {entry.new}" + (f" ({value!r} → {mapped!r})" if entry.values else ""))
    return m


def script_mode_hint(config_path: Path) -> str:
    """The line that runs a project's own script on this config, under the cockpit."""
    return ("cockpit run -- accelerate launch YOUR_SCRIPT.py --config " + shlex.quote(str(config_path))
            + "   (or: cockpit run -- python YOUR_SCRIPT.py --config ...)")
