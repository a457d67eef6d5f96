"""The file helpers every floor uses: one atomic writer, and YAML read and written one way.

PyYAML is imported only when YAML is read or written: the hook's modules in the user's process
import the run folder, which needs `write_atomic` and nothing else from here."""

from __future__ import annotations

import functools
import os
import re
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: str | bytes) -> None:
    """Temp file in the same folder + fsync + os.replace: a reader sees the old or the new file whole.
    The one atomic writer: status.json, outcome.json, caches, demo assets, control files."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_FLOAT_1_2 = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X)
"""YAML 1.2's floats: `1e-4` too, which YAML 1.1 reads as a string."""


@functools.cache
def _loader() -> type:
    """YAML 1.2 scalars: `1e-4` is a number and `no`/`yes`/`on`/`off` are strings (YAML 1.1 reads
    `eval_strategy: no` as false, which TRL then refuses)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                                 re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789."))
    return Loader


@functools.cache
def _dumper() -> type:
    """Quotes every string that either dialect would read as something else: `safe_load` (1.2)
    reads what it writes back the same, and so does a YAML 1.1 reader (TRL's, of trl.yaml) — the
    string "1e-5" (a script's argument) is written '1e-5', the string "no" 'no'."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789."))
    return Dumper


YAML_MAX_NODES = 100_000
"""How many values a YAML file may stand for once its aliases are expanded, beyond the ones it
writes out: a few lines of nested anchors (`a: &a [x, x]`, `b: &b [*a, *a]`, ...) stand for
billions, and every reader that walks a preset would walk them all."""


def safe_load(text: str) -> Any:
    """YAML with 1.2 scalars (see `_loader`), refused (yaml.YAMLError, one line) when its aliases
    expand past `YAML_MAX_NODES` or refer to themselves."""
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: Any) -> None:
    """Count the values `root` stands for with every alias expanded, each node's size once
    (memoised), without recursion: a deep document cannot exhaust the stack here either."""
    import yaml

    size: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            total = 1 + sum(size[id(c)] for c in _children(node))
            size[key] = total
            if total > max(YAML_MAX_NODES, 2 * distinct):
                raise yaml.MarkedYAMLError(problem=f"its aliases expand to more than {YAML_MAX_NODES:,} values "
                                           "— write the values out instead of nesting anchors")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise yaml.MarkedYAMLError(problem="an alias refers to the value it is inside of — a YAML value "
                                       "cannot contain itself")
        open_nodes.add(key)
        distinct += 1
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise yaml.MarkedYAMLError(problem="an alias refers to the value it is inside of — a YAML value cannot "
                                     "contain itself")
            if id(child) not in size:
                stack.append((child, False))


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):
        return [x for item in value for x in (item if isinstance(item, tuple) else (item,))]
    return []


def dump_yaml(obj: Any) -> str:
    import yaml

    return yaml.dump(obj, Dumper=_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False)
