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
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
        list("-+0123456789."),
    )
    return Loader


def safe_load(text: str) -> Any:
    """YAML with 1.2 scalars (see `_loader`)."""
    import yaml

    return yaml.load(text, Loader=_loader())


def dump_yaml(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, default_flow_style=False)
