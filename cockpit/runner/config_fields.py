"""The fields of a TRL config dataclass as JSON: name, readable type, default, choices, help.

Part of discovery (`cockpit.runner.discover`), kept apart because it is the part that reads
types: TRL mixes real and string annotations, Literal and Enum choices, `X | None` unions and
defaults that only a factory can make, and every one of them must come out as plain JSON the
setup form and validation read without importing trl.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import enum
import inspect
import math
import re
import sys
import types
import typing
from typing import Any


def _type_name(tp: Any) -> str:
    """A short readable type: 'int', 'float|None', 'list[str]|None', "Literal['a','b']"."""
    if tp is None or tp is type(None):
        return "None"
    if isinstance(tp, str):
        # Unresolved string annotation: strip module paths, spaces and typing. prefixes.
        s = re.sub(r"\b(?:[A-Za-z_][\w]*\.)+(?=[A-Za-z_])", "", tp)
        s = s.replace("NoneType", "None").replace(" ", "")
        m = re.fullmatch(r"Optional\[(.*)\]", s)
        return f"{m.group(1)}|None" if m else s
    if isinstance(tp, typing.ForwardRef):
        return _type_name(tp.__forward_arg__)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        parts = [_type_name(a) for a in args if a is not type(None)]
        if any(a is type(None) for a in args):
            parts.append("None")
        return "|".join(parts)
    if origin is typing.Literal:
        return "Literal[" + ",".join(repr(a) for a in args) + "]"
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        if origin is collections.abc.Callable or name == "Callable":
            return "Callable"
        if not args:
            return name
        return f"{name}[" + ",".join("..." if a is Ellipsis else _type_name(a) for a in args) + "]"
    if tp is typing.Any:
        return "Any"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


_JSON_KINDS = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null", list: "list",
               tuple: "list", set: "list", frozenset: "list", dict: "dict"}


def _kinds(tp: Any) -> list[str] | None:
    """The JSON kinds a value of this type may be written as (bool, int, float, str, list, dict,
    null), in the order the type names them; None when that cannot be told (an annotation left a
    string, Any, a class of its own). Validation checks a preset's values against these."""
    if tp is None or tp is type(None):
        return ["null"]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        out: list[str] = []
        for arg in sorted(args, key=lambda a: a is type(None)):  # None last, as the readable type says it
            kinds = _kinds(arg)
            if kinds is None:
                return None
            out += [k for k in kinds if k not in out]
        return out
    if origin is typing.Literal:
        found = [_JSON_KINDS.get(type(a)) for a in args]
        return None if None in found else list(dict.fromkeys(k for k in found if k))
    if origin is typing.Annotated:
        return _kinds(args[0])
    if origin is not None:
        if isinstance(origin, type) and issubclass(origin, collections.abc.Mapping):
            return ["dict"]
        if isinstance(origin, type) and issubclass(origin, (list, tuple, set, frozenset, collections.abc.Sequence)):
            return ["list"]
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        found = [_JSON_KINDS.get(type(m.value)) for m in tp]
        return None if not found or None in found else list(dict.fromkeys(k for k in found if k))
    if isinstance(tp, type) and tp in _JSON_KINDS:
        return [_JSON_KINDS[tp]]
    return None


def _enum_values(tp: Any) -> list[Any] | None:
    """Choices implied by a Literal or Enum type (also inside `X | None` / `Enum | str`)."""
    if isinstance(tp, str):
        m = re.search(r"Literal\[(.*?)\]", tp)
        if m:
            try:
                values = ast.literal_eval(f"({m.group(1)},)")
            except (ValueError, SyntaxError):
                return None
            return [_json_safe(v) for v in values]
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [_json_safe(m.value) for m in tp]
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return [_json_safe(a) for a in typing.get_args(tp)]
    if origin is typing.Union or origin is types.UnionType:
        for arg in typing.get_args(tp):
            found = _enum_values(arg)
            if found:
                return found
    return None


def _json_safe(value: Any, depth: int = 0) -> Any:
    """JSON-able default: plain values as is, enums by value, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return _json_safe(value.value, depth + 1)
    if depth < 4 and isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    if depth < 4 and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_safe(v, depth + 1) for k, v in value.items()}
    return repr(value)


def _resolved_hints(cls: type) -> dict[str, Any]:
    """Field types resolved to objects where possible (TRL mixes real and string annotations);
    an annotation that cannot be resolved stays a string."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
        pass
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(klass.__module__)
        scope = dict(vars(module)) if module is not None else {}
        for name, ann in inspect.get_annotations(klass).items():
            if isinstance(ann, str):
                try:
                    ann = eval(ann, scope, dict(vars(klass)))
                except Exception:  # noqa: BLE001 - discovery reads whatever TRL ships; one broken piece is recorded, not fatal
                    pass
            hints[name] = ann
    return hints


def describe_fields(cls: type, training_arg_names: frozenset[str], group: str | None = None) -> list[dict]:
    """The init fields of a dataclass as JSON dicts, in declaration order."""
    hints = _resolved_hints(cls)
    out: list[dict] = []
    for f in dataclasses.fields(cls):
        if f.name.startswith("_") or not f.init:
            continue
        tp = hints.get(f.name, f.type)
        default: Any = None
        has_factory = False
        required = False
        if f.default is not dataclasses.MISSING:
            default = _json_safe(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            has_factory = True
            try:
                default = _json_safe(f.default_factory())
            except Exception as exc:  # noqa: BLE001 - a factory that needs a GPU, say
                default = f"<factory failed: {type(exc).__name__}>"
        else:
            required = True
        meta = dict(f.metadata or {})
        choices = meta.get("choices")
        if choices is not None:
            choices = [_json_safe(c) for c in choices]
        else:
            choices = _enum_values(tp)
        if group is not None:
            field_group = group
        else:
            field_group = "TrainingArguments" if f.name in training_arg_names else cls.__name__
        out.append(
            {
                "name": f.name,
                "type": _type_name(tp),
                "kinds": _kinds(tp),
                "default": default,
                "default_factory": has_factory,
                "required": required,
                "help": str(meta.get("help", "") or ""),
                "choices": choices,
                "group": field_group,
            }
        )
    return out
