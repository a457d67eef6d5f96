"""Commands about the installed TRL: trainers, fields (with TRL's own help text)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from cockpit.cli.output import _width, table


def registry_for(args: argparse.Namespace, refresh: bool = False):
    """The TRL registry of this cockpit's env, or of the project's Python given with --python. In a
    light install without --python, the refusal names --python as the other way."""
    from cockpit.errors import CockpitError
    from cockpit.trainers.registry import load_registry

    project = getattr(args, "python", None)
    if project:
        return load_registry(refresh=refresh, project=project)
    try:
        return load_registry(refresh=refresh)
    except CockpitError as exc:
        if "training stack" not in str(exc):
            raise
        raise CockpitError(f"{exc}; or read your project's own TRL: --python /path/to/its/venv/bin/python") \
            from None


def cmd_trainers(args: argparse.Namespace) -> int:
    reg = registry_for(args, refresh=args.refresh)
    specs = reg.all_known() if args.all else reg.trainers
    if args.json:
        print(json.dumps([_spec_json(s) for s in specs], indent=2))
        return 0
    print(f"TRL {reg.trl_version}")
    rows = []
    for s in specs:
        flags = []
        if s.experimental:
            flags.append("experimental")
        if s.cli_command:
            flags.append(f"trl {s.cli_command}")
        if s.needs:
            flags.append(f"needs {s.needs}")
        if not s.available:
            flags.append(s.missing_hint or "not available")
        data = " | ".join("/".join(f) for f in s.data_formats) or "?"
        rows.append([s.name, s.title, data, ", ".join(flags)])
    for line in table([["name", "description", "data columns", "notes"], *rows], _width(),
                      caps={0: 19, 2: 36}, shrink=(2, 1), last_min=18):
        print(line)
    return 0


def _spec_json(s) -> dict:
    return {**s.to_json(with_fields=False), "fields": len(s.fields)}


def cmd_fields(args: argparse.Namespace) -> int:
    reg = registry_for(args)
    spec = reg.get(args.trainer)
    if args.field:
        return _show_field(spec, args.field, as_json=args.json)
    fields = list(reg.fields(spec.name))
    if args.search:
        fields = search_fields(fields, args.search)
        if not fields:
            print(f"cockpit: no field matches {args.search!r} — try another word, or "
                  f"`cockpit fields {spec.name}` for all of them", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps([f.__dict__ for f in fields], indent=2, default=str))
        return 0
    rows = [[f.name, str(f.type), str(f.default), f.help or ""] for f in fields]
    for line in table(rows, _width(), caps={0: 28, 1: 16, 2: 12}, shrink=(2, 1), last_min=30):
        print(line)
    return 0


def search_fields(fields: list, query: str) -> list:
    """Fields whose name or help mentions `query`: name matches first (the exact name, a whole
    part of the name, its start, anywhere in it), then help texts where it is a word of its
    own, earliest first, then help texts that merely contain it."""
    q = query.lower().strip()
    word = re.compile(rf"(?<![a-z0-9]){re.escape(q)}(?![a-z0-9])")
    ranked = []
    for order, f in enumerate(fields):
        name, text = f.name.lower(), (f.help or "").lower()
        if name == q:
            rank = (0, 0)
        elif q in name.split("_"):
            rank = (1, 0)
        elif name.startswith(q):
            rank = (2, 0)
        elif q in name:
            rank = (3, 0)
        elif (m := word.search(text)):
            rank = (4, m.start())
        elif q in text:
            rank = (5, text.index(q))
        else:
            continue
        ranked.append((rank, order, f))
    return [f for _, _, f in sorted(ranked, key=lambda t: (t[0], t[1]))]


def _show_field(spec, name: str, *, as_json: bool) -> int:
    """One field in full: type, default, choices, where it comes from, and TRL's whole help."""
    import textwrap

    from cockpit.trainers.registry import suggest_key

    groups = (spec.fields, spec.script_args, spec.model_config, spec.dataset_mixture)
    field = next((f for group in groups for f in group if f.name == name), None)
    if field is None:
        close = suggest_key(spec, name)
        hint = f"did you mean '{close}'? " if close else ""
        from cockpit.errors import CockpitError

        raise CockpitError(f"{spec.name} has no field '{name}' — {hint}`cockpit fields {spec.name} "
                           f"--search WORD` finds one")
    if as_json:
        print(json.dumps(field.to_json(), indent=2, default=str))
        return 0
    width = max(40, _width())
    print(field.name + (f"  ({field.group})" if field.group else ""))
    print(f"  type:     {field.type}")
    print(f"  default:  {field.default!r}" + ("  (computed)" if field.default_factory else ""))
    if field.choices:
        print(f"  choices:  {', '.join(str(c) for c in field.choices)}")
    if field.required:
        print("  required: yes")
    print()
    for para in (field.help or "(no help text)").split("\n\n"):
        print(textwrap.fill(" ".join(para.split()), width=width - 2, initial_indent="  ",
                            subsequent_indent="  "))
    return 0
