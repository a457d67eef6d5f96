"""Build datasets, reward functions and the trainer from a run folder's run.yaml.

This mirrors what TRL's own CLI scripts do (HfArgumentParser over ScriptArguments,
the trainer's config and ModelConfig), and adds what users trip over: bf16 off on a
CPU-only machine, report_to none, PPO's four models with the value model never None,
prompts tokenized for PPO, reward functions from files. Which extra arguments a trainer
takes is read from its constructor's signature, so a trainer added to TRL later needs no
code here. The tokenizer and models are loaded by `runner.models` (a pad token and a chat
template when they are missing); the periodic samples come from `runner.samples`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from cockpit.config import datasets as ds
from cockpit.config.presets import device_policy, reward_file_ref
from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.run.section import CockpitSection, cockpit_section, output_dir
from cockpit.runner.models import load_causal_lm, load_scorer, load_tokenizer
from cockpit.runner.samples import sample_prompts
from cockpit.trainers.knowledge import traits


@dataclass
class Built:
    trainer: Any
    config: Any
    tokenizer: Any
    model: Any
    trainer_info: dict[str, Any]
    warnings: list[journal.Record] = field(default_factory=list)
    sample_prompts: list[Any] = field(default_factory=list)


def read_run(run: RunFolder) -> tuple[dict[str, Any], CockpitSection, dict[str, Any]]:
    """(flat TRL keys, the cockpit section typed, trainer info) from the run folder; output_dir
    where the folder is now (`run.section.output_dir`), whatever an older run.yaml wrote, as an
    absolute path: the runner need not run in the run folder (the trainer matrix runs many in one
    process)."""
    cfg = run.config(strict=True)
    info = json.loads(run.trainer_json.read_text(encoding="utf-8"))
    cockpit = cockpit_section(run, strict=True)
    cfg.pop("cockpit", None)
    cfg.pop("trainer", None)
    cfg["output_dir"] = str((output_dir(run) or run.output).absolute())
    return cfg, cockpit, info


def _script_args_class(cli_command: str | None):
    from trl import ScriptArguments

    if cli_command:
        try:
            mod = importlib.import_module(f"trl.scripts.{cli_command}")
        except ImportError:
            return ScriptArguments
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, ScriptArguments) and obj is not ScriptArguments \
                    and dataclasses.is_dataclass(obj):
                return obj
    return ScriptArguments


def parse_args(flat: dict[str, Any], info: dict[str, Any], *, cuda: bool,
               warnings: list[journal.Record]):
    """(script_args, config, model_args, dataset_mixture) the way TRL's CLI parses a --config."""
    from transformers import HfArgumentParser
    from trl import ModelConfig

    module = importlib.import_module(info.get("config_module") or info["module"])
    config_cls = getattr(module, info["config_class"])
    types: list[Any] = [_script_args_class(info.get("cli_command")), config_cls, ModelConfig]  # DataClassType
    try:
        from trl import DatasetMixtureConfig

        types.append(DatasetMixtureConfig)
    except ImportError:
        pass
    flat, notes = device_policy(flat, gpu=cuda)
    warnings.extend(journal.warning(message, code=code, fix=fix) for code, message, fix in notes)
    parser = HfArgumentParser(types)
    try:
        parsed = parser.parse_dict(flat, allow_extra_keys=False)
    except ValueError as exc:
        raise CockpitError(f"config rejected by {info['config_class']}: {exc}") from None
    script_args, config, model_args = parsed[:3]
    if getattr(config, "trust_remote_code", False):
        model_args._cockpit_trust_remote_code = True
    mixture = parsed[3] if len(parsed) > 3 else None
    return script_args, config, model_args, mixture


# -- data ----------------------------------------------------------------------------------


def load_split(script_args, cockpit: CockpitSection, split_expr: str):
    from datasets import load_dataset

    name = script_args.dataset_name
    ref = ds.resolve(name, script_args.dataset_config)
    dcfg = cockpit.dataset
    if ref.kind == "file":
        dset = load_dataset(ref.builder, data_files={"train": ref.name},
                            split=split_expr.replace(ds.split_base(split_expr), "train", 1))
    elif ref.kind == "folder":
        data_files = dcfg.get("data_files")
        dset = load_dataset(ref.name, data_files=data_files, split=split_expr)
    else:
        dset = load_dataset(ref.name, ref.config, split=split_expr)
    renames = dcfg.get("columns") or {}
    if renames:
        dset = dset.rename_columns(dict(renames))
    return dset


def load_data(script_args, config, mixture, cockpit: CockpitSection, info: dict[str, Any]):
    """(train, eval or None). Column checks happen here too: hub data could not be checked
    before launch."""
    from accelerate import PartialState

    dcfg = cockpit.dataset
    want_eval = str(getattr(config, "eval_strategy", "no")) not in ("no", "IntervalStrategy.NO")
    with PartialState().local_main_process_first():
        if mixture is not None and getattr(mixture, "datasets", None):
            from trl import get_dataset

            dd = get_dataset(mixture)
            train = dd[script_args.dataset_train_split]
            evals = dd[script_args.dataset_test_split] if want_eval else None
        else:
            if not script_args.dataset_name:
                raise CockpitError("no data: set dataset_name")
            train_split = str(dcfg.get("split") or script_args.dataset_train_split)
            train = load_split(script_args, cockpit, train_split)
            evals = None
            if want_eval:
                eval_split = str(dcfg.get("eval_split") or script_args.dataset_test_split)
                try:
                    evals = load_split(script_args, cockpit, eval_split)
                except ValueError as exc:
                    raise CockpitError(f"eval_strategy is {config.eval_strategy} but the data has no "
                                       f"'{eval_split}' split ({exc}) — set cockpit.dataset.eval_split "
                                       "or eval_strategy: no") from None
    formats = tuple(tuple(f) for f in info.get("data_formats") or ())
    ds.check_columns(list(train.column_names), formats, info["name"], script_args.dataset_name or "mixture")
    return train, evals


def tokenize_prompts(dset, tokenizer):
    """PPO takes pre-tokenized `input_ids`; a common trap is handing it raw text."""
    if "input_ids" in dset.column_names:
        return dset

    def tok(row):
        prompt = row["prompt"]
        if isinstance(prompt, list):
            ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
            if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
                ids = ids["input_ids"]
        else:
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return {"input_ids": ids, "lengths": len(ids)}

    return dset.map(tok, remove_columns=dset.column_names)


# -- rewards -------------------------------------------------------------------------------


def load_reward_func(ref: str):
    """TRL built-in names, cockpit built-ins, dotted import paths, or path/file.py:function."""
    file_ref = reward_file_ref(ref)
    if file_ref is not None:
        path, func = file_ref[0].resolve(), file_ref[1]
        if not path.is_file():
            raise CockpitError(f"reward function {ref}: no file {path}")
        spec = importlib.util.spec_from_file_location(f"cockpit_reward_{path.stem}", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, func, None)
        if not callable(fn):
            raise CockpitError(f"reward function {ref}: {path.name} has no function '{func}'")
        return fn
    from cockpit.runner import rewards as builtin

    if hasattr(builtin, ref) and callable(getattr(builtin, ref)):
        return getattr(builtin, ref)
    try:
        import trl.rewards as trl_rewards

        if hasattr(trl_rewards, ref):
            return getattr(trl_rewards, ref)
    except ImportError:
        pass
    if "." in ref:
        mod_name, func = ref.rsplit(".", 1)
        sys.path.insert(0, os.getcwd())
        try:
            fn = getattr(importlib.import_module(mod_name), func, None)
        except ImportError as exc:
            raise CockpitError(f"reward function {ref}: cannot import {mod_name} ({exc})") from None
        if callable(fn):
            return fn
    raise CockpitError(f"reward function {ref!r} not found — use a TRL reward name, a dotted "
                       "import path or path/file.py:function")


def reward_funcs(script_args, cockpit: CockpitSection) -> list[Any]:
    funcs: list[Any] = []
    path = getattr(script_args, "reward_model_name_or_path", None) or cockpit.models.get("reward_model")
    if path:
        funcs.append(path)
    names: list[str] = []
    for source in (getattr(script_args, "reward_funcs", None), cockpit.reward_funcs):
        if source:
            names.extend([source] if isinstance(source, str) else list(source))
    funcs.extend(load_reward_func(str(n)) for n in names)
    return funcs


# -- the trainer ---------------------------------------------------------------------------


def build(run: RunFolder, jw: journal.JournalWriter, *, cuda: bool) -> Built:
    flat, cockpit, info = read_run(run)
    warnings: list[journal.Record] = []
    import trl  # noqa: F401 - imported here so the 'importing' phase covers it

    module = importlib.import_module(info["module"])
    trainer_cls = getattr(module, info["trainer_class"])
    script_args, config, model_args, mixture = parse_args(flat, info, cuda=cuda, warnings=warnings)
    if not model_args.model_name_or_path:
        raise CockpitError("no model: set model_name_or_path")

    jw.write(journal.phase("loading_model", model_args.model_name_or_path))
    tokenizer = load_tokenizer(model_args, warnings)
    trained = traits(info["name"])
    if trained.head == "scorer":
        # A scorer (the reward trainer's model): a sequence-classification head with one label.
        model = load_scorer(model_args.model_name_or_path, model_args, tokenizer)
    else:
        model = load_causal_lm(model_args.model_name_or_path, model_args, tokenizer)
    models = cockpit.models

    params = inspect.signature(trainer_cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def takes(name: str) -> bool:
        return name in params or (takes_any and name in ("train_dataset", "eval_dataset",
                                                          "processing_class", "peft_config",
                                                          "callbacks"))

    kwargs: dict[str, Any] = {"model": model, "args": config}
    extra = set(info.get("extra_models") or ())
    if takes("processing_class"):
        kwargs["processing_class"] = tokenizer
    if takes("peft_config"):
        from trl import get_peft_config

        peft = get_peft_config(model_args)
        if peft is not None:
            kwargs["peft_config"] = peft
    if "ref_model" in params:
        ref = models.get("ref_model")
        if ref:
            kwargs["ref_model"] = load_causal_lm(str(ref), model_args, tokenizer)
        elif trained.ref_from_policy:
            kwargs["ref_model"] = load_causal_lm(model_args.model_name_or_path, model_args, tokenizer)
    if "reward_model" in params or "value_model" in params or "value_model" in extra:
        rm_path = models.get("reward_model") or getattr(config, "reward_model_path", None)
        vm_path = models.get("value_model") or rm_path
        if "reward_model" in params and rm_path:
            kwargs["reward_model"] = load_scorer(str(rm_path), model_args, tokenizer)
        if "value_model" in params:
            if not vm_path:
                raise CockpitError(f"{info['name']} needs a value model — set "
                                   "cockpit.models.value_model or cockpit.models.reward_model")
            kwargs["value_model"] = load_scorer(str(vm_path), model_args, tokenizer)
    if "teacher_model" in params or "teacher_model" in extra:
        teacher = models.get("teacher_model") or getattr(config, "teacher_model_name_or_path", None)
        if teacher and "teacher_model" in params:
            kwargs["teacher_model"] = load_causal_lm(str(teacher), model_args, tokenizer)
    if "reward_funcs" in params or "reward_funcs" in extra:
        funcs = reward_funcs(script_args, cockpit)
        if not funcs:
            raise CockpitError(f"{info['name']} needs reward functions — set reward_funcs or "
                               "cockpit.reward_funcs")
        kwargs["reward_funcs"] = funcs

    jw.write(journal.phase("preparing_data", script_args.dataset_name))
    train, evals = load_data(script_args, config, mixture, cockpit, info)
    prompts = sample_prompts(train, cockpit)
    if trained.tokenized_prompts:
        train = tokenize_prompts(train, tokenizer)
        evals = tokenize_prompts(evals, tokenizer) if evals is not None else None
    if evals is None and trained.eval_from_train:  # it needs an eval set: the first training rows
        evals = train.select(range(min(len(train), trained.eval_from_train)))
    if takes("train_dataset"):
        kwargs["train_dataset"] = train
    if evals is not None and (takes("eval_dataset") or trained.eval_from_train):
        kwargs["eval_dataset"] = evals

    missing = [n for n, p in params.items() if n != "self" and p.default is inspect.Parameter.empty
               and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
               and n not in kwargs]
    if missing:
        raise CockpitError(f"{info['trainer_class']} needs {', '.join(missing)}, which the preset "
                           "does not give — see `cockpit trainers`")
    if "policy" in params and "model" not in params:  # PPO before TRL 1.0 named it `policy`
        kwargs["policy"] = kwargs.pop("model")
    trainer = trainer_cls(**kwargs)
    return Built(trainer=trainer, config=config, tokenizer=tokenizer, model=model,
                 trainer_info=info, warnings=warnings, sample_prompts=prompts)
