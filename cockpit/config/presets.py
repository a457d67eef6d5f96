"""Presets: a known run in one YAML file.

A preset is the flat YAML that `trl <cmd> --config` takes (every dataclass's
fields at one level), plus `trainer:` and a `cockpit:` section for what TRL does
not know (extra models, reward functions given as `file.py:function`, column
renames, periodic sample generation, the launcher). Values may name the offline
demo assets as `demo:models/tiny-lm`; they resolve to the per-user cache at launch,
so demo presets work from any working directory.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cockpit.demo import DEMO_PREFIX
from cockpit.errors import CockpitError
from cockpit.files import dump_yaml, safe_load
from cockpit.paths import package_presets_dir, user_presets_dir


@dataclass
class Preset:
    trainer: str
    trl: dict[str, Any] = field(default_factory=dict)
    cockpit: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    @property
    def name(self) -> str:
        if self.cockpit.get("name"):
            return str(self.cockpit["name"])
        if self.source is not None:
            return self.source.stem
        return self.trainer

    @property
    def description(self) -> str:
        return str(self.cockpit.get("description") or "")

    def to_dict(self) -> dict[str, Any]:
        """The run.yaml shape: trainer, the flat TRL keys, then the cockpit section."""
        out: dict[str, Any] = {"trainer": self.trainer}
        out.update(self.trl)
        if self.cockpit:
            out["cockpit"] = self.cockpit
        return out

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict())

    def copy(self) -> Preset:
        return Preset(self.trainer, copy.deepcopy(self.trl), copy.deepcopy(self.cockpit), self.source)




def preset_from_dict(obj: Any, *, source: Path | None = None) -> Preset:
    where = str(source) if source else "preset"
    if not isinstance(obj, dict):
        raise CockpitError(f"{where}: a preset is a YAML mapping of keys to values — "
                           f"got {type(obj).__name__}")
    obj = dict(obj)
    trainer = obj.pop("trainer", None)
    if not trainer or not isinstance(trainer, str):
        raise CockpitError(f"{where}: no 'trainer:' key — name the trainer: `cockpit run sft {where}`, "
                           f"`--trainer sft`, or add 'trainer: sft' (`cockpit trainers` lists them)")
    section = obj.pop("cockpit", None) or {}
    if not isinstance(section, dict):
        raise CockpitError(f"{where}: 'cockpit:' must be a mapping")
    # Unknown `cockpit:` keys are reported by validation, together with every other problem.
    bad = [k for k in obj if not isinstance(k, str)]
    if bad:
        raise CockpitError(f"{where}: key {bad[0]!r} is not a name — TRL keys are names like max_steps")
    return Preset(trainer=trainer.strip().lower().replace("-", "_"), trl=obj, cockpit=section,
                  source=source)


PRESET_MAX_BYTES = 16 << 20
"""A preset or TRL config is a few KB; past this it is not read."""


def load_preset(path: str | os.PathLike[str], *, trainer: str | None = None) -> Preset:
    """Read a preset file, or a preset name from the shipped / user folders. `trainer` names the
    trainer of a plain TRL CLI config (which has no `trainer:` key), or replaces the file's."""
    p = find_preset(path)
    from cockpit.files import read_regular

    try:
        raw = read_regular(p, PRESET_MAX_BYTES)  # a FIFO or /dev/zero given as a preset is not read
    except OSError as exc:
        raise CockpitError(f"{p}: cannot read ({exc.strerror}) — check the path") from None
    text = raw.decode("utf-8-sig", errors="replace")
    try:
        obj = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise CockpitError(f"{p}:{where}{':' if where else ''} {problem} — fix the YAML syntax") from None
    if trainer and isinstance(obj, dict):
        obj = {**obj, "trainer": trainer}
    return preset_from_dict(obj, source=p)


def find_preset(ref: str | os.PathLike[str]) -> Path:
    p = Path(ref).expanduser()
    if p.is_file():
        return p
    if p.exists():
        raise CockpitError(f"{p}: is a folder, not a preset file — give a .yaml file")
    name = p.name if p.suffix else p.name + ".yaml"
    if len(p.parts) == 1:
        for folder in (user_presets_dir(), package_presets_dir()):
            if (folder / name).is_file():
                return folder / name
    names = ", ".join(i.path.stem for i in list_presets()) or "none"
    raise CockpitError(f"{ref}: no such preset file — give a path or one of: {names}")


@dataclass
class PresetInfo:
    path: Path
    trainer: str
    description: str
    origin: str  # "shipped" or "user"
    error: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem


def list_presets() -> list[PresetInfo]:
    """Shipped and user presets; a broken file is listed with its error, not dropped."""
    out: list[PresetInfo] = []
    for origin, folder in (("user", user_presets_dir()), ("shipped", package_presets_dir())):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            try:
                preset = load_preset(path)
                out.append(PresetInfo(path, preset.trainer, preset.description, origin))
            except CockpitError as exc:
                out.append(PresetInfo(path, "?", "", origin, error=str(exc)))
    return out


# -- overrides -----------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """`--set` values are YAML scalars or flow collections: 3, 1e-4, true, [a, b], {r: 8}."""
    try:
        return safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        return text


def apply_overrides(preset: Preset, assignments: list[str]) -> Preset:
    """`key=value` pairs; dotted keys reach nested sections (`cockpit.launcher.num_processes=2`)."""
    out = preset.copy()
    for item in assignments:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CockpitError(f"--set {item!r}: expected key=value, e.g. --set max_steps=50")
        value = parse_value(raw)
        parts = key.split(".")
        if parts == ["trainer"]:
            if not isinstance(value, str):
                raise CockpitError(f"--set trainer={raw}: trainer is a name like sft")
            out.trainer = value
            continue
        if parts[0] == "cockpit":
            if len(parts) == 1:
                raise CockpitError("--set cockpit=...: set a key inside it, e.g. cockpit.name=x")
            target, parts = out.cockpit, parts[1:]
        else:
            target = out.trl
        for part in parts[:-1]:
            nxt = target.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                target[part] = nxt
            target = nxt
        target[parts[-1]] = value
    return out


# -- reward functions from files ----------------------------------------------------------


def reward_file_ref(ref: str) -> tuple[Path, str] | None:
    """`path/file.py:function` as (path, function); None for names and dotted paths."""
    file, sep, func = str(ref).partition(":")
    if not sep or not file.endswith(".py"):
        return None
    return Path(file).expanduser(), func


# -- demo asset references -----------------------------------------------------------------


def uses_demo_assets(preset: Preset) -> bool:
    found = False

    def visit(v: Any) -> None:
        nonlocal found
        if isinstance(v, str) and v.startswith(DEMO_PREFIX):
            found = True
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)
        elif isinstance(v, list):
            for x in v:
                visit(x)

    visit(preset.trl)
    visit(preset.cockpit)
    return found


def resolve_demo_refs(preset: Preset, demo_root: Path) -> Preset:
    """`demo:models/tiny-lm` → an absolute path under the demo cache."""

    def fix(v: Any) -> Any:
        if isinstance(v, str) and v.startswith(DEMO_PREFIX):
            return str(demo_root / v[len(DEMO_PREFIX):])
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    out = preset.copy()
    out.trl = fix(out.trl)
    out.cockpit = fix(out.cockpit)
    return out


def device_policy(trl: dict[str, Any], *, gpu: bool) -> tuple[dict[str, Any], list[tuple[str, str, str | None]]]:
    """The flat TRL keys as cockpit runs them, and why they changed: `report_to: none` unless asked;
    without a GPU, bf16 and fp16 off and `use_cpu` on (TRL configs default to bf16, which fails on a
    CPU). One rule for the runner and for the `trl <cmd>` config written beside it.
    Returns (keys, notes); a note is (code, message, fix)."""
    out = dict(trl)
    out.setdefault("report_to", "none")
    notes: list[tuple[str, str, str | None]] = []
    if not gpu:
        for key in ("bf16", "fp16"):
            if out.get(key):
                notes.append(("bf16_off", f"{key} was asked for but this machine has no GPU — turned off",
                              f"drop {key} from the preset when training on CPU"))
            out[key] = False
        out["use_cpu"] = True
        notes.append(("cpu_only", "no GPU: training on the CPU with bf16 off (TRL configs default to bf16=True)",
                      None))
    return out, notes

