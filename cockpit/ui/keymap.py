"""The user's keymap: `keymap.toml` in the config folder (next to `themes/` and `alerts.yaml`)
gives any of cockpit's keys another key, by binding id.

```toml
"live.stop_save" = "ctrl+s"        # a quoted id, or a table per screen:
[run]
toggle_x = "X"
pick_metric = ["m", "ctrl+n"]      # several keys: a list, or "m,ctrl+n"
```

Every `Binding` cockpit declares has an id (`binding_ids` finds them all, for validation, the
help screen and docs/keys.md). The app applies the keymap with Textual's `App.set_keymap`.
Entries that cannot work (an unknown id, something that is not a key) are skipped and reported
together, one line each with the fix, in one notification; the other entries still apply and a
broken file leaves the default keys. Nothing here raises.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding

# Textual's own key normalisation (private names): keys are compared as `set_keymap` stores them.
from textual.keys import REPLACED_KEYS, Keys, _character_to_key, _normalize_key_list, key_to_character

from cockpit.paths import config_dir

KEYMAP_FILE = "keymap.toml"
MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED_KEYS = frozenset(k.value.rpartition("+")[2] for k in Keys if not k.value.startswith("<"))
KEY_EXAMPLES = "ctrl+s, shift+tab, f5, escape, question_mark, K"


def keymap_path() -> Path:
    """Where the user's keymap lives (`COCKPIT_CONFIG_DIR` or `XDG_CONFIG_HOME` honoured)."""
    return config_dir() / KEYMAP_FILE


@dataclass(frozen=True)
class BindingInfo:
    """One remappable key of cockpit: what `docs/keys.md` and the keymap checks know of it."""

    id: str
    key: str
    """The default key(s), comma-separated, as declared."""
    description: str
    owner: type
    """The class that declares it (`LiveRunScreen`): the key works there and in subclasses."""

    def keys(self) -> list[str]:
        return _normalize_key_list(self.key).split(",")

    def shares_bindings_with(self, other: BindingInfo) -> bool:
        """Whether both end up in one node's bindings (one class, or a class and its base), where
        one key cannot do two things."""
        return issubclass(self.owner, other.owner) or issubclass(other.owner, self.owner)


def binding_ids() -> dict[str, BindingInfo]:
    """Every binding id declared in `cockpit.ui`, found by importing its modules: a screen or
    widget added later is covered without a list to keep up to date."""
    import cockpit.ui

    for module in pkgutil.walk_packages(cockpit.ui.__path__, "cockpit.ui."):
        importlib.import_module(module.name)
    from textual.dom import DOMNode

    found: dict[str, BindingInfo] = {}
    pending: list[type] = [DOMNode]
    seen: set[type] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if not cls.__module__.startswith("cockpit.ui"):
            continue
        for binding in cls.__dict__.get("BINDINGS", []):
            if isinstance(binding, Binding) and binding.id:
                found.setdefault(binding.id, BindingInfo(binding.id, binding.key,
                                                         binding.description, cls))
    return dict(sorted(found.items()))


def key_problem(key: str) -> str | None:
    """Why `key` (one key, e.g. "ctrl+s") is not a key Textual can bind, or None."""
    if not key:
        return "an empty key"
    *modifiers, name = key.split("+")
    if len(key) == 1 or key == "+":
        return None  # any single character
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown:
        return f"{unknown[0]!r} is not a modifier (ctrl, shift, alt, meta, super, hyper)"
    if len(name) == 1 or name in _NAMED_KEYS:
        return None
    # Textual reads any Unicode character name (`banana` is 🍌), but a keyboard sends only the
    # printable ASCII ones by name (`question_mark`, `left_square_bracket`).
    char = key_to_character(REPLACED_KEYS.get(name, name))
    if char is not None and len(char) == 1 and char.isascii() and char.isprintable():
        return None
    return f"{name!r} is not a key name"


def _flatten(table: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """`[run] toggle_x = "X"` and `run.toggle_x = "X"` (a dotted TOML key) both mean the id
    `run.toggle_x`."""
    out: dict[str, object] = {}
    for name, value in table.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def parse_keymap(table: Mapping[str, object], known: Mapping[str, BindingInfo]
                 ) -> tuple[dict[str, str], list[str]]:
    """The entries of a keymap table that can apply, as `App.set_keymap` takes them, and one line
    per entry that cannot, each naming the entry and the fix. An entry that takes a key from
    another binding of the same screen applies, and a line says which binding loses the key
    (Textual drops it from that binding without a word)."""
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in _flatten(table).items():
        if binding_id not in known:
            close = difflib.get_close_matches(binding_id, list(known), n=1)
            hint = f"did you mean {close[0]}?" if close else "the ids are in the help screen (?)"
            problems.append(f"{binding_id}: no such key binding — {hint}")
            continue
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            keys = [v.strip() for v in value]
        elif isinstance(value, str) and value.strip():
            keys = [k.strip() for k in value.split(",")] if value.strip() != "," else [","]
        else:
            problems.append(f"{binding_id} = {value!r}: give a key as text, e.g. \"ctrl+s\" "
                            "(several: [\"s\", \"ctrl+s\"])")
            continue
        keys = [_character_to_key(k) if len(k) == 1 else k for k in keys]
        bad = next(((k, p) for k in keys if (p := key_problem(k))), None)
        if bad is not None:
            problems.append(f"{binding_id} = {value!r}: {bad[1]} — keys look like {KEY_EXAMPLES}")
            continue
        keymap[binding_id] = ",".join(keys)
    for binding_id, joined in keymap.items():
        taker = known[binding_id]
        for other in known.values():
            if other.id == binding_id or other.id in keymap or not taker.shares_bindings_with(other):
                continue
            for key in set(joined.split(",")) & set(other.keys()):
                problems.append(f"{binding_id} = {key!r}: {other.description} ({other.id}) had "
                                f"{key} and loses it — give {other.id} another key if you want it")
    return keymap, problems


def load_keymap(path: Path | None = None, known: Mapping[str, BindingInfo] | None = None
                ) -> tuple[dict[str, str], list[str]]:
    """The user's keymap (none when the file does not exist) and one line per problem found.
    `known` is the set of binding ids (`binding_ids()` unless given)."""
    path = path or keymap_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [f"{path}: cannot read it ({exc.strerror}) — the default keys are used"]
    try:
        table = tomllib.loads(raw.decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: not valid TOML ({str(exc).splitlines()[0][:80]}) — fix it; the "
                    "default keys are used meanwhile"]
    if not table:
        return {}, []
    return parse_keymap(table, binding_ids() if known is None else known)
