"""Build tokenizer, models, datasets and the trainer from a run folder's run.yaml.

This mirrors what TRL's own CLI scripts do (HfArgumentParser over ScriptArguments,
the trainer's config and ModelConfig), and adds what users trip over (see the
users hit): a pad token when the tokenizer has none, a chat template fallback, bf16
off on a CPU-only machine, report_to none, PPO's four models with the value model
never None, prompts tokenized for PPO, reward functions from files. Which extra
arguments a trainer takes is read from its constructor's signature, so a
trainer added to TRL later needs no code here.
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

import yaml

from cockpit.config import datasets as ds
from cockpit.config.presets import device_policy, reward_file_ref
from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.trainers.knowledge import traits

SIMPLE_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


@dataclass
class Built:
    trainer: Any
    config: Any
    tokenizer: Any
    model: Any
    trainer_info: dict[str, Any]
    warnings: list[journal.Record] = field(default_factory=list)
    sample_prompts: list[Any] = field(default_factory=list)


def read_run(run: RunFolder) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(flat TRL keys, cockpit section, trainer info) from the run folder."""
    cfg = yaml.safe_load(run.run_yaml.read_text(encoding="utf-8")) or {}
    info = json.loads(run.trainer_json.read_text(encoding="utf-8"))
    cockpit = cfg.pop("cockpit", None) or {}
    cfg.pop("trainer", None)
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
    types: list[type] = [_script_args_class(info.get("cli_command")), config_cls, ModelConfig]
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


def _trust_remote_code(model_args) -> bool:
    """TRL moved trust_remote_code from ModelConfig to the trainer config; read either."""
    return bool(getattr(model_args, "trust_remote_code", False)
                or getattr(model_args, "_cockpit_trust_remote_code", False))


def load_tokenizer(model_args, config, warnings: list[journal.Record], path: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(
        path or model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=_trust_remote_code(model_args))
    if tok.pad_token is None:
        fallback = tok.eos_token or tok.unk_token
        if fallback is None:
            tok.add_special_tokens({"pad_token": "<|pad|>"})
            fallback = "<|pad|>"
        tok.pad_token = fallback
        warnings.append(journal.warning(
            f"the tokenizer has no pad token — using {fallback!r}", code="pad_token",
            fix="save the tokenizer with a pad token to silence this"))
    if getattr(tok, "chat_template", None) is None:
        tok.chat_template = SIMPLE_CHAT_TEMPLATE
        warnings.append(journal.warning("the tokenizer has no chat template — using a simple one",
                                        code="chat_template"))
    return tok


def _model_kwargs(model_args) -> dict[str, Any]:
    from trl import get_quantization_config

    kwargs: dict[str, Any] = {
        "revision": model_args.model_revision,
        "trust_remote_code": _trust_remote_code(model_args),
    }
    if model_args.attn_implementation:
        kwargs["attn_implementation"] = model_args.attn_implementation
    dtype = getattr(model_args, "dtype", None) or getattr(model_args, "torch_dtype", None)
    if dtype and dtype != "auto":
        import torch

        kwargs["dtype"] = getattr(torch, dtype)
    quant = get_quantization_config(model_args)
    if quant is not None:
        kwargs["quantization_config"] = quant
        from accelerate import PartialState

        # What TRL's get_kbit_device_map did before it was removed: the process's own GPU.
        kwargs["device_map"] = {"": PartialState().local_process_index}
    return kwargs


def load_causal_lm(path: str, model_args, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, **_model_kwargs(model_args))
    if getattr(model.config, "pad_token_id", None) is None and tokenizer is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    if model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return model


def load_scorer(path: str, model_args, tokenizer):
    """Reward and value models: sequence classification with one label, as TRL's reward examples do."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=1, **_model_kwargs(model_args))
    if getattr(model.config, "pad_token_id", None) is None and tokenizer is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model


# -- data ----------------------------------------------------------------------------------


def load_split(script_args, cockpit: dict[str, Any], split_expr: str):
    from datasets import load_dataset

    name = script_args.dataset_name
    ref = ds.resolve(name, script_args.dataset_config)
    dcfg = cockpit.get("dataset") or {}
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


def load_data(script_args, config, mixture, cockpit: dict[str, Any], info: dict[str, Any]):
    """(train, eval or None). Column checks happen here too: hub data could not be checked
    before launch."""
    from accelerate import PartialState

    dcfg = cockpit.get("dataset") or {}
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


def reward_funcs(script_args, cockpit: dict[str, Any]) -> list[Any]:
    funcs: list[Any] = []
    path = getattr(script_args, "reward_model_name_or_path", None) or \
        (cockpit.get("models") or {}).get("reward_model")
    if path:
        funcs.append(path)
    names: list[str] = []
    for source in (getattr(script_args, "reward_funcs", None), cockpit.get("reward_funcs")):
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
    tokenizer = load_tokenizer(model_args, config, warnings)
    trained = traits(info["name"])
    if trained.head == "scorer":
        # A scorer (the reward trainer's model): a sequence-classification head with one label.
        model = load_scorer(model_args.model_name_or_path, model_args, tokenizer)
    else:
        model = load_causal_lm(model_args.model_name_or_path, model_args, tokenizer)
    models = cockpit.get("models") or {}

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
    sample_prompts = _sample_prompts(train, cockpit)
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
                 trainer_info=info, warnings=warnings, sample_prompts=sample_prompts)


def _sample_prompts(train, cockpit: dict[str, Any]) -> list[Any]:
    comp = cockpit.get("completions") or {}
    n = int(comp.get("num_prompts", 4))
    for col in ("prompt", "messages", "text"):
        if col in train.column_names:
            rows = train.select(range(min(n, len(train))))[col]
            if col == "messages":
                rows = [[m for m in msgs if m.get("role") != "assistant"][:1] or msgs[:1] for msgs in rows]
            if col == "text":
                rows = [str(t)[: max(8, len(str(t)) // 3)] for t in rows]
            return list(rows)
    return []


MIN_NEW_TOKENS = 8
"""Tokens of each periodic sample generated before EOS may end it."""


def make_sampler(built: Built, cockpit: dict[str, Any]):
    """Periodic generation on a few fixed prompts for trainers that do not sample themselves."""
    comp = cockpit.get("completions") or {}
    every = comp.get("every_steps")
    if not every or not built.sample_prompts or traits(built.trainer_info["name"]).head == "scorer":
        return None, None
    max_new = int(comp.get("max_new_tokens", 24))
    # A model trained on short completions that end in EOS soon answers every prompt with EOS
    # first, or with spaces when EOS is held back (the tiny demo model from step 2 on). These
    # samples are for seeing what the model leans towards: EOS is held back for the first
    # tokens and no pair of tokens repeats. `min_new_tokens: 0` shows the raw greedy answer.
    min_new = max(0, min(max_new, int(comp.get("min_new_tokens", MIN_NEW_TOKENS))))
    shaping = {"min_new_tokens": min_new, "no_repeat_ngram_size": 2} if min_new else {}
    prompts = built.sample_prompts

    def sample(step: int) -> list[dict[str, Any]]:
        import torch

        model = built.model  # the policy itself: trainers may wrap it (PPO's policy+value wrapper)
        tok = built.tokenizer
        was_training = model.training
        model.eval()
        rows = []
        try:
            with torch.no_grad():
                for p in prompts:
                    if isinstance(p, list):
                        text = tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                    else:
                        text = str(p)
                    enc = tok(text, return_tensors="pt", add_special_tokens=False).to(model.device)
                    out = model.generate(**enc, max_new_tokens=max_new, do_sample=False,
                                         eos_token_id=tok.eos_token_id,
                                         pad_token_id=tok.pad_token_id, **shaping)
                    # Special tokens stay visible: a model that answers with an immediate EOS
                    # should show that, not an empty string.
                    new = out[0, enc["input_ids"].shape[1]:].tolist()
                    while len(new) > 1 and new[-1] == tok.pad_token_id and new[-2] == tok.pad_token_id:
                        new.pop()
                    completion = tok.decode(new, skip_special_tokens=False)
                    rows.append({"prompt": text, "completion": completion, "rewards": {},
                                 "advantage": None})
        finally:
            if was_training:
                model.train()
        return rows

    return sample, int(every)
