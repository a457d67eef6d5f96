"""The trainer registry: discovered from the installed TRL, cached per version, light to import."""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest

from cockpit.errors import CockpitError
from cockpit.trainers import discovery as discovery_mod
from cockpit.trainers.registry import (
    KNOWLEDGE,
    Registry,
    check_config_keys,
    installed_versions,
    known_config_keys,
    load_registry,
    schema_cache_path,
    suggest_key,
)


def _trl_version() -> tuple[int, ...]:
    return tuple(int(p) for p in importlib.metadata.version("trl").split(".")[:2])


TRL_HAS_PPO = _trl_version() <= (1, 12)

EXPECTED = ["sft", "dpo", "grpo", "kto", "reward", "rloo", "cpo", "orpo", "online_dpo", "gkd", "tpo", "distillation"]


@pytest.fixture(scope="session")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Registry]:
    """One real discovery per test session, cached in a private cache folder."""
    cache = tmp_path_factory.mktemp("cockpit-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("COCKPIT_CACHE_DIR", str(cache))
    try:
        reg = load_registry(refresh=True)
    finally:
        mp.undo()
    return cache, reg


@pytest.fixture
def reg(discovered: tuple[Path, Registry]) -> Registry:
    return discovered[1]


# --- discovery under the installed TRL


def test_discovery_lists_at_least_twenty_trainers_including_the_core_ones(reg: Registry) -> None:
    names = reg.names()
    assert len(names) >= 20, names
    for name in EXPECTED:
        assert name in names, f"{name} missing from {names}"
    assert reg.trl_version == importlib.metadata.version("trl")


def test_trainers_are_stable_first_then_experimental_each_alphabetical(reg: Registry) -> None:
    stable = [s.name for s in reg.trainers if not s.experimental]
    experimental = [s.name for s in reg.trainers if s.experimental]
    assert [s.name for s in reg.trainers] == stable + experimental
    assert stable == sorted(stable) and experimental == sorted(experimental)
    assert {"sft", "dpo", "grpo", "kto", "reward", "rloo", "distillation"} <= set(stable)


def test_deprecated_experimental_aliases_are_listed_once_as_the_stable_class(reg: Registry) -> None:
    names = reg.names()
    assert len(names) == len(set(names))
    assert reg.get("kto").module == "trl" and not reg.get("kto").experimental
    assert reg.get("distillation").module == "trl"
    aliases = [t for t in reg.discovery["trainers"] if t.get("alias_of")]
    assert {t["module"] for t in aliases} >= {"trl.experimental.kto"}


def test_every_available_trainer_has_fields_with_help(reg: Registry) -> None:
    for spec in reg.trainers:
        assert spec.available and spec.import_error is None
        assert spec.trainer_class and spec.config_class and spec.config_module
        assert len(spec.fields) > 100, spec.name
        missing_help = [f.name for f in spec.fields if not f.help.strip()]
        assert not missing_help, f"{spec.name}: no help for {missing_help}"
        assert not any(f.name.startswith("_") for f in spec.fields)


def test_sft_fields_carry_types_defaults_groups_and_choices(reg: Registry) -> None:
    sft = reg.get("sft")
    max_length = sft.field("max_length")
    learning_rate = sft.field("learning_rate")
    assert max_length is not None and learning_rate is not None
    assert max_length.type == "int|None" and max_length.group == "SFTConfig"
    assert learning_rate.type == "float" and learning_rate.group == "TrainingArguments"
    assert isinstance(learning_rate.default, float)
    scheduler = sft.field("lr_scheduler_type")
    assert scheduler is not None and scheduler.choices and "cosine" in scheduler.choices
    assert reg.fields("sft") == sft.fields


def test_knowledge_facts_are_merged_into_discovered_specs(reg: Registry) -> None:
    sft = reg.get("sft")
    assert sft.title == "Supervised fine-tuning"
    assert ("prompt", "completion") in sft.data_formats and ("messages",) in sft.data_formats
    assert sft.cli_command == "sft" and not sft.samples
    assert reg.get("grpo").samples and reg.get("grpo").extra_models == ("reward_funcs",)
    assert reg.get("tpo").data_formats == (("prompt", "chosen", "rejected", "reference"),)
    assert reg.get("cpo").cli_command is None and reg.get("cpo").experimental
    if "async_grpo" in reg.names():
        assert reg.get("async_grpo").needs == "CUDA"


def test_cli_script_arguments_join_the_trainer_key_space(reg: Registry) -> None:
    grpo_keys = known_config_keys(reg.get("grpo"))
    sft_keys = known_config_keys(reg.get("sft"))
    assert {"learning_rate", "dataset_name", "model_name_or_path", "datasets", "env"} <= sft_keys
    assert "reward_funcs" in grpo_keys and "reward_funcs" not in sft_keys


@pytest.mark.skipif(TRL_HAS_PPO, reason="PPO still ships in TRL <= 1.12")
def test_ppo_is_unavailable_after_trl_1_12_with_a_pip_hint(reg: Registry) -> None:
    assert "ppo" not in reg.names()
    ppo = next(s for s in reg.all_known() if s.name == "ppo")
    assert not ppo.available
    with pytest.raises(CockpitError, match=r"pip install 'trl==1\.12\.\*'"):
        reg.get("ppo")


@pytest.mark.skipif(not TRL_HAS_PPO, reason="PPO was removed in TRL 1.13")
def test_ppo_is_available_under_trl_1_12(reg: Registry) -> None:
    ppo = reg.get("ppo")
    assert ppo.available and ppo.module == "trl.experimental.ppo" and ppo.experimental
    assert set(ppo.extra_models) == {"ref_model", "reward_model", "value_model"}
    assert ppo.field("num_ppo_epochs") is not None


def test_unknown_trainer_suggests_the_close_name(reg: Registry) -> None:
    with pytest.raises(CockpitError, match=r"unknown trainer 'sfft' — did you mean 'sft'\? `cockpit trainers`"):
        reg.get("sfft")
    with pytest.raises(CockpitError, match="`cockpit trainers` lists them"):
        reg.get("qqqqqq")
    assert reg.get("Online-DPO").name == "online_dpo"


def test_misspelt_config_key_gets_a_suggestion(reg: Registry) -> None:
    sft = reg.get("sft")
    assert suggest_key(sft, "learning_rat") == "learning_rate"
    assert suggest_key(sft, "zzzzzz") is None
    with pytest.raises(CockpitError, match=r"unknown config key 'learning_rat' — did you mean 'learning_rate'\?"):
        check_config_keys(sft, ["max_steps", "learning_rat"])
    check_config_keys(sft, ["max_steps", "learning_rate", "dataset_name", "model_name_or_path", "env"])


def test_registry_json_round_trips(reg: Registry) -> None:
    data = json.loads(reg.to_json())
    assert data["trl_version"] == reg.trl_version
    names = [t["name"] for t in data["trainers"]]
    assert set(reg.names()) <= set(names)
    assert {"script_args", "model_config"} <= data.keys()


# --- cache


def test_schema_cache_is_written_and_reused_without_a_subprocess(
    discovered: tuple[Path, Registry], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache, first = discovered
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(cache))
    path = schema_cache_path(*installed_versions())
    assert path.is_file() and path.parent == cache / "schemas"
    assert path.name.endswith(f"-schema{discovery_mod.SCHEMA}.json")
    no_python = str(tmp_path / "no-such-python")
    again = load_registry(python=no_python)  # would fail if it spawned the discovery
    assert again.names() == first.names()
    with pytest.raises(CockpitError, match="cannot run"):
        load_registry(refresh=True, python=no_python)  # proof that a spawn with it does fail


def test_a_process_that_finds_a_discovery_under_way_waits_for_its_cache_instead_of_running_its_own(
    discovered: tuple[Path, Registry], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Processes that start together on a cold cache (a TUI, a supervisor, the CLI) import TRL once."""
    import threading

    from filelock import FileLock

    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path / "cold"))
    path = schema_cache_path(*installed_versions())
    path.parent.mkdir(parents=True)
    got: list[Registry | BaseException] = []

    def second() -> None:
        try:
            got.append(load_registry(python=str(tmp_path / "no-such-python")))  # a spawn would fail
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            got.append(exc)

    with FileLock(str(path) + ".lock"):  # the first process's discovery, under way
        waiting = threading.Thread(target=second)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and not got  # it waits for the lock
        path.write_text((discovered[0] / "schemas" / path.name).read_text(encoding="utf-8"), encoding="utf-8")
    waiting.join(30)
    assert len(got) == 1 and isinstance(got[0], Registry), got
    assert got[0].names() == discovered[1].names()


def test_a_corrupt_cache_is_rediscovered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path))
    path = schema_cache_path(*installed_versions())
    path.parent.mkdir(parents=True)
    path.write_text('{"schema": 1, "trainers": [', encoding="utf-8")
    with pytest.raises(CockpitError, match="cannot run"):  # it tried to rediscover
        load_registry(python=str(tmp_path / "no-such-python"))


def test_failed_discovery_reports_the_last_stderr_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path / "cache"))
    fake = tmp_path / "fake-python"
    fake.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho 'ImportError: broken trl' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(CockpitError, match="reading the TRL trainers failed: ImportError: broken trl"):
        load_registry(refresh=True, python=str(fake))
    assert not list((tmp_path / "cache").glob("schemas/*.json"))  # no cache written (its lock file may stay)


def test_missing_trl_is_a_one_line_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = discovery_mod.importlib.util.find_spec

    def find_spec(name: str, *args: Any):
        return None if name in ("trl", "peft") else real(name, *args)

    monkeypatch.setattr(discovery_mod.importlib.util, "find_spec", find_spec)
    with pytest.raises(CockpitError) as err:
        load_registry()
    assert str(err.value) == ("this needs the training stack, and trl, peft are not installed — "
                              "pip install 'cockpit[train]' (viewing, replay and export work without it)")


# --- merging rules, on synthetic discoveries (no TRL import)


def _entry(name: str, **kw: object) -> dict:
    base = {
        "name": name,
        "module": f"trl.experimental.{name}",
        "trainer_class": "FrobnicateTrainer",
        "config_class": "FrobnicateConfig",
        "experimental": True,
        "alias_of": None,
        "import_error": None,
        "init_params": ["model", "teacher_model", "args"],
        "fields": [{"name": "beta", "type": "float", "default": 0.1, "help": "b", "choices": None, "group": "X"}],
    }
    base.update(kw)
    return base


def test_a_trainer_unknown_to_knowledge_still_appears() -> None:
    reg = Registry({"schema": 1, "trl_version": "9.0.0", "trainers": [_entry("frobnicate")]})
    spec = reg.get("frobnicate")
    assert spec.available and spec.title == "Frobnicate" and spec.data_formats == ()
    assert spec.extra_models == ("teacher_model",)  # read from the constructor's parameters
    assert "frobnicate" not in KNOWLEDGE


def test_a_trainer_that_failed_to_import_is_unavailable_with_an_install_hint() -> None:
    broken = _entry("async_grpo", trainer_class=None, config_class=None, fields=[],
                    import_error="ModuleNotFoundError: No module named 'aiohttp'")
    reg = Registry({"schema": 1, "trl_version": "1.12.0", "trainers": [broken]})
    assert "async_grpo" not in reg.names()
    with pytest.raises(CockpitError, match="pip install aiohttp"):
        reg.get("async_grpo")


def test_knowledge_trainers_absent_from_trl_name_the_last_release_that_has_them() -> None:
    reg = Registry({"schema": 1, "trl_version": "1.16.0", "trainers": []})
    known = {s.name: s for s in reg.all_known()}
    assert not known["xpo"].available
    assert known["xpo"].missing_hint == "xpo was removed in TRL 1.14 — pip install 'trl==1.13.*' to use it"
    assert known["ppo"].missing_hint == "ppo was removed in TRL 1.13 — pip install 'trl==1.12.*' to use it"


# --- the discovery's field description, on a local dataclass


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@dataclasses.dataclass
class SampleConfig:
    lr: float = dataclasses.field(default=1e-3, metadata={"help": "step size"})
    tags: list[str] | None = dataclasses.field(default_factory=lambda: ["a"], metadata={"help": "t"})
    kind: Literal["x", "y"] = "x"
    mode: Mode | str = Mode.FAST
    limit: float = float("inf")
    _private: int = 0
    derived: int = dataclasses.field(default=0, init=False)


def test_field_description_is_readable_and_json_safe() -> None:
    from cockpit.runner.config_fields import describe_fields

    fields = {f["name"]: f for f in describe_fields(SampleConfig, frozenset({"lr"}))}
    assert set(fields) == {"lr", "tags", "kind", "mode", "limit"}
    assert fields["lr"]["group"] == "TrainingArguments" and fields["lr"]["help"] == "step size"
    assert fields["tags"] == {**fields["tags"], "type": "list[str]|None", "default": ["a"], "default_factory": True}
    assert fields["kind"]["type"] == "Literal['x','y']" and fields["kind"]["choices"] == ["x", "y"]
    assert fields["mode"]["default"] == "fast" and fields["mode"]["choices"] == ["fast", "slow"]
    assert fields["limit"]["default"] == "inf"
    json.dumps(fields)  # JSON-safe throughout


def test_unresolvable_string_annotations_still_read_well() -> None:
    from cockpit.runner.config_fields import _enum_values, _type_name

    assert _type_name("typing.Optional[torch.dtype]") == "dtype|None"
    assert _type_name("Literal['a', 'b'] | None") == "Literal['a','b']|None"
    assert _enum_values("Literal['a', 'b'] | None") == ["a", "b"]


def test_trainer_names_are_snake_case_of_the_class_prefix() -> None:
    from cockpit.runner.discover import snake_case

    assert [snake_case(p) for p in ("SFT", "OnlineDPO", "RLOO", "Reward", "AsyncGRPO", "IWOPD")] == [
        "sft", "online_dpo", "rloo", "reward", "async_grpo", "iwopd"
    ]


# --- layering


@pytest.mark.proc
def test_importing_the_registry_loads_no_trl_or_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        import cockpit.trainers.registry
        heavy = ("trl", "torch", "transformers", "textual", "datasets", "peft")
        print(",".join(m for m in heavy if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
