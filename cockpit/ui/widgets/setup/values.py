"""Text typed into a setup form field ↔ the value a preset holds, by the field's TRL type.

The registry describes each field's type as readable text ("int", "float|None",
"list[str]|None", "dict[str,Any]|str|None" ...). The form reads what the user typed the way
`trl <cmd> --config` would read the YAML value, so an invalid number is refused in the form,
next to the field, before anything is validated or launched.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from cockpit.config.draft import UNSET  # the draft's; the widgets import it from here too
from cockpit.config.presets import parse_value
from cockpit.files import dump_yaml
from cockpit.trainers.registry import ConfigField

_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_INT = re.compile(r"^[-+]?\d+$")


def type_parts(type_str: str) -> set[str]:
    """'dict[str,Any]|str|None' -> {'dict', 'str', 'None'} (top-level alternatives, base names)."""
    parts: set[str] = set()
    depth = 0
    current = ""
    for ch in type_str.replace(" ", ""):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "|" and depth == 0:
            parts.add(current)
            current = ""
        else:
            current += ch
    parts.add(current)
    return {re.split(r"\[", p)[0] for p in parts if p}


def is_bool_field(field: ConfigField) -> bool:
    parts = type_parts(field.type) - {"None"}
    return parts == {"bool"}


def select_choices(field: ConfigField) -> tuple[str, ...] | None:
    """Choices shown in a Select: only when they are all names (a `Literal[False]` is not)."""
    if not field.choices or not all(isinstance(c, str) for c in field.choices):
        return None
    return tuple(field.choices)


def parse_text(field: ConfigField, text: str) -> Any:
    """The value of what was typed, UNSET when empty; ValueError (message for the user) when
    it cannot be what the field's type says."""
    text = text.strip()
    if not text:
        return UNSET
    parts = type_parts(field.type)
    if field.type == "map":  # cockpit.dataset.columns: "old:new, old2:new2"
        out: dict[str, str] = {}
        for item in text.split(","):
            if not item.strip():
                continue
            old, sep, new = item.partition(":")
            if not sep or not old.strip() or not new.strip():
                raise ValueError(f"'{item.strip()}': write renames as old:new, separated by commas")
            out[old.strip()] = new.strip()
        return out or UNSET
    if parts & {"list", "tuple"}:
        if text.startswith("[") and field.type.replace(" ", "") in ("list[str]", "list[str]|None"):
            # Names, as written: `[accuracy_reward, rewards.py:my_fn]` (YAML would read `a: b`
            # as a mapping and `1` as a number).
            if not text.endswith("]"):
                raise ValueError("the list has no closing ]: write [a, b], or just a, b")
            return [t.strip().strip("'\"") for t in text[1:-1].split(",") if t.strip().strip("'\"")]
        if text.startswith("["):
            if not text.endswith("]"):
                raise ValueError("the list has no closing ]: write [a, b], or just a, b")
            value = _yaml(text)
            if not isinstance(value, list):
                raise ValueError("expected a list like [a, b]")
            return value
        items = [t.strip() for t in text.split(",") if t.strip()]
        if "str" in parts and len(items) == 1:
            return items[0]
        return items
    if parts & {"dict"} and text.startswith("{"):
        value = _yaml(text)
        if not isinstance(value, dict):
            raise ValueError("expected a mapping like {key: value}")
        return value
    numeric = parts & {"int", "float"}
    if numeric and not (parts - {"int", "float", "None"}):
        if text.lower() in ("none", "null") and "None" in parts:
            return None
        if "float" not in numeric:
            if _INT.match(text):
                return int(text)
            raise ValueError("must be a whole number, e.g. 8")
        if _INT.match(text):
            return int(text)
        if _NUMBER.match(text) or text.lower() in ("inf", "-inf", "nan"):
            return float(text)
        raise ValueError("must be a number, e.g. 1e-4 or 0.5")
    if parts - {"None"} == {"str"} or parts - {"None"} <= {"str", "Literal"}:
        return text
    if "str" in parts and not numeric and "bool" not in parts:
        return text
    return parse_value(text)


def _yaml(text: str) -> Any:
    try:
        return parse_value(text)
    except yaml.YAMLError as exc:  # parse_value already falls back to text; belt and braces
        raise ValueError(str(exc)) from None


def format_value(field: ConfigField, value: Any) -> str:
    """What an Input shows for a value held by a preset."""
    if value is None or value is UNSET:
        return ""
    if field.type == "map" and isinstance(value, dict):
        return ", ".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (str, int, float)) and "," not in str(v) for v in value):
            return ", ".join(str(v) for v in value)
        return dump_yaml(list(value), flow=True).strip()  # the dialect parse_text reads back
    if isinstance(value, dict):
        return dump_yaml(value, flow=True).strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def same_as_default(field: ConfigField, value: Any) -> bool:
    """A value equal to TRL's default does not go into the preset (a switch turned off counts as
    the default `None` of an optional bool)."""
    default = field.default
    if value is UNSET:
        return True
    if is_bool_field(field) and default is None and value is False:
        return True
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - odd defaults (repr strings) are simply "different"
        return False


def default_text(field: ConfigField) -> str:
    """The placeholder of an empty Input: TRL's default, so the user sees what empty means."""
    if field.default is None or field.default == "" or field.default == [] or field.default == {}:
        return "default: none" if field.group != "cockpit" else ""
    return f"default: {format_value(field, field.default)}"


_ROLE = re.compile(r":(?:py:)?[a-z]+:`(?:([^`<]*?)\s*<([^`>]*)>|([^`]*))`")
_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://|/)[^)]*\)")
_CODE = re.compile(r"``([^`]+)``|(?<![`\w])`([^`]+)`(?!`)")


def _short_ref(ref: str) -> str:
    """Sphinx's `~a.b.C` shows as `C`."""
    ref = ref.strip()
    return ref[1:].rsplit(".", 1)[-1] if ref.startswith("~") else ref


def clean_help(text: str) -> str:
    """TRL's help strings are written for its docs (reST and markdown): shown in a terminal,
    ``'float32'`` reads 'float32', :class:`~transformers.Trainer` reads Trainer,
    [`~trl.SFTConfig`] reads SFTConfig, [paper](https://…) reads paper."""
    text = _ROLE.sub(lambda m: m.group(1) or _short_ref(m.group(2) or m.group(3) or ""), text)
    text = re.sub(r"\[`([^`\]]+)`\]", lambda m: _short_ref(m.group(1)), text)
    text = _LINK.sub(r"\1", text)
    return _CODE.sub(lambda m: _short_ref(m.group(1) or m.group(2)), text)


_SET_FIX = re.compile(r"fix it in the preset or with --set ([\w.]+)=\.\.\.")
_SET_EXAMPLE = re.compile(r"--set ([\w.]+)=(\S+)")
_FIELDS_CMD = re.compile(r"`cockpit fields [^`]+` lists them")


def for_the_form(message: str) -> str:
    """Validation speaks to `cockpit run` users (`--set key=...`); in the form the same advice
    is a field to fill in."""
    message = _SET_FIX.sub(r"fix the \1 field", message)
    message = _SET_EXAMPLE.sub(r"\2 in the \1 field", message)
    return _FIELDS_CMD.sub("ctrl+f searches them", message)


def full_help(text: str) -> str:
    """The whole help text on one line, cleaned (`clean_help`)."""
    return " ".join(clean_help(text).split())


def first_sentence(text: str, limit: int = 160) -> str:
    """TRL help strings run long; one sentence is enough under a field (the rest on focus)."""
    text = full_help(text)
    m = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: m.start()] if m else text
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
