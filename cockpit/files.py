# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The file helpers every floor uses: one atomic writer, and YAML read and written one way.

PyYAML is imported only when YAML is read or written: the hook's modules in the user's process
import the run folder, which needs `write_atomic` and `open_own` and nothing else from here."""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

RESERVE_BYTES = 16 * 2**10
"""Room kept beside a file that must still be written on a full disk (status.json: a few KB)."""


def spare_of(path: Path) -> Path:
    """The reserved file beside `path` that the next write on a full disk goes into (`reserve`)."""
    return path.with_name(f".{path.name}.spare")


def resting_of(path: Path) -> Path:
    """The reserved file that was `path` one write on a full disk ago, resting before it is the
    spare again: a reader that opened it then may still be reading it (`_write_reserved`)."""
    return path.with_name(f".{path.name}.rest")


def reserve(path: Path, size: int = RESERVE_BYTES) -> None:
    """Keep `size` bytes of disk twice beside `path` while there is room (the spare and the resting
    file), for `write_atomic(..., reserved=True)` on a full disk. Raises OSError when it cannot be
    made."""
    for kept in (spare_of(path), resting_of(path)):
        if not kept.is_file():
            write_atomic(kept, b" " * size)


def write_atomic(path: Path, data: str | bytes, *, reserved: bool = False) -> None:
    """Temp file in the same folder + fsync + os.replace: a reader sees the old or the new file whole.
    The one atomic writer: status.json, outcome.json, caches, demo assets, control files.

    `reserved`: on a full disk (ENOSPC, EDQUOT: no block, or no inode) the new content goes into
    the file `reserve` kept, whose blocks and inode are already the file's, and that file is
    renamed over `path` — still whole or not at all for a reader; the old file's blocks are kept
    (a hard link, no data) for a later write."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        # Out of inodes, the temp file itself cannot be made (ENOSPC with blocks free): the spare
        # holds an inode as well as blocks.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        if reserved and exc.errno in (errno.ENOSPC, errno.EDQUOT) and _write_reserved(path, payload):
            return
        raise
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if reserved and isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT) \
                and _write_reserved(path, payload):
            return
        raise


def _write_reserved(path: Path, payload: bytes) -> bool:
    """`payload` into the spare (never past what its blocks hold: no new block), padded with spaces
    to its size (JSON and YAML read them as nothing), then renamed over `path`. False when there is
    no spare that holds it.

    The replaced file is not the next spare at once: it rests for one write (`resting_of`) and the
    one resting before it becomes the spare. A reader that opened `path` just before this write may
    still be between two reads of it; were its blocks written again by the very next write (the
    supervisor writes the run's end and a journal problem a few milliseconds apart), that reader
    would read the old text's head and the new one's tail."""
    spare, resting = spare_of(path), resting_of(path)
    try:
        fd = os.open(spare, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        room = max(st.st_size, st.st_blocks * 512)  # what its blocks hold: a 400-byte file has 4 KB
        if len(payload) > room:
            return False
        os.pwrite(fd, payload + b" " * max(0, st.st_size - len(payload)), 0)
        os.fsync(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    kept = path.with_name(f".{path.name}.kept")
    try:
        kept.unlink(missing_ok=True)
        os.link(path, kept)  # the old file's blocks, for a later write
        linked = True
    except OSError:
        linked = False
    os.replace(spare, path)
    try:
        if resting.is_file():
            os.replace(resting, spare)  # it rested one write: no reader opened it since
        if linked:
            os.replace(kept, resting if spare.is_file() else spare)
    except OSError:
        pass
    return True


def open_own(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """Open a file the cockpit writes in a run folder (`flags`: O_WRONLY/O_RDWR, O_APPEND, ...; O_CREAT
    is added) and return its descriptor, never through a link: a symlink, a FIFO or a socket put
    where the file should be is removed and a regular file made in its place, so nothing the
    cockpit writes leaves the run folder, and no write blocks on a pipe. A folder or a device in its
    place is an OSError for the caller to say (never removed)."""
    import stat

    base = flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(3):
        try:
            fd = os.open(path, base | os.O_NONBLOCK, mode)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO) or not _remove_odd(path):
                raise
            continue
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
            return fd
        os.close(fd)
        if not _remove_odd(path):
            raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                          "not a regular file", os.fspath(path))
    raise OSError(errno.ELOOP, "cannot make a regular file here (it keeps being replaced)", os.fspath(path))


def _remove_odd(path: str | os.PathLike[str]) -> bool:
    """Remove a symlink, FIFO or socket at `path`; False (nothing removed) for anything else."""
    import stat

    try:
        st = os.lstat(path)
        if not (stat.S_ISLNK(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
            return False
        os.unlink(path)
    except FileNotFoundError:
        pass
    return True


class NotRegularFile(OSError):
    """A path a reader expected to be a file is a FIFO, a device, a socket or a folder (or a link
    to one): reading it could block forever or never end, so it is not read."""


class FileTooLarge(OSError):
    """A file longer than its reader's bound (status.json, run.yaml, a trainer_state.json)."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """A regular file opened for reading in binary, or OSError: `NotRegularFile` for a FIFO (opened
    without blocking, never read), a device such as /dev/zero (also through a link), a socket or a
    folder. Every reader of a run folder's files opens them here."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) \
                else "not a file"
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({what})", os.fspath(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole of a regular file of at most `limit` bytes: `NotRegularFile` (see `open_regular`)
    or `FileTooLarge` otherwise, never a read without end.

    The memory asked for is the file's, not the bound's: `read(n)` allocates n bytes before it
    reads one, so a bound of 4 GB was a 4 GB buffer for a 3 KB file (a MemoryError under
    `ulimit -v`). The file is read at its size, then on in chunks while it still grows."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(min(size, limit) + 1)
        if len(data) > size and len(data) <= limit:  # it grew since: read on, a chunk at a time
            parts = [data]
            total = len(data)
            while total <= limit:
                chunk = fh.read(min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                parts.append(chunk)
                total += len(chunk)
            data = b"".join(parts)
    if len(data) > limit:
        raise FileTooLarge(errno.EFBIG, f"longer than {limit:,} bytes", os.fspath(path))
    return data


READ_LIMIT = 64 << 20
"""The default bound of `read_text_regular`: a run folder's small files (run.yaml, outcome.json,
alerts, mute lists, kept samples) are far under it."""


def read_text_regular(path: str | os.PathLike[str], limit: int = READ_LIMIT) -> str:
    """`read_regular` as UTF-8 text (a BOM dropped); UnicodeDecodeError (a ValueError) for bytes
    that are not UTF-8."""
    return read_regular(path, limit).decode("utf-8-sig")


class QuotedLiterals:
    """A JSON file read as a stream (ijson) with its bare NaN / Infinity literals quoted ("nan",
    "inf", "-inf", as `trainer_state.load_json` quotes them for orjson): transformers writes them
    and ijson refuses them. A literal cut by a chunk's end is held back until the next chunk
    completes it (none is longer than `_HELD`). A BOM at the start is dropped."""

    _HELD = len(b"-Infinity")

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._held = b""
        if fh.read(3) != b"\xef\xbb\xbf":
            fh.seek(0)

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson's probe: bytes or text
            return b""
        while True:
            chunk = self._fh.read(max(size, 1 << 16))
            data = self._held + chunk
            if b"NaN" in data:
                data = data.replace(b"NaN", b'"nan"')
            if b"Infinity" in data:
                data = data.replace(b"-Infinity", b'"-inf"').replace(b"Infinity", b'"inf"')
            if not chunk:
                self._held = b""
                return data
            self._held = data[-self._HELD:]
            if len(data) > self._HELD:
                return data[:-self._HELD]


def check_json_object(path: str | os.PathLike[str], limit: int) -> None:
    """ValueError unless `path` (a regular file of at most `limit` bytes: `read_regular`'s
    errors otherwise) holds one whole JSON object, read as a stream where ijson is there (the
    cockpit's side): a 200 MB trainer_state.json is checked without its tree in memory. Where it
    is not (the user's Python, which imports the run folder), the file is parsed whole."""
    try:
        import ijson
    except ImportError:
        if not isinstance(json.loads(read_regular(path, limit)), dict):
            raise ValueError("not a JSON object") from None
        return
    with open_regular(path) as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            raise FileTooLarge(errno.EFBIG, f"longer than {limit:,} bytes", os.fspath(path))
        reader = QuotedLiterals(fh)
        head = b""
        while not head.strip() and (more := reader.read(1 << 16)):
            head += more
        if not head.lstrip().startswith(b"{"):
            raise ValueError("not a JSON object")
        fh.seek(0)
        try:
            for _ in ijson.items(QuotedLiterals(fh), "\x00", use_float=True):  # no such prefix: parse only
                pass
        except ijson.JSONError as exc:
            raise ValueError(str(exc).split("\n")[0]) from None


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
    import yaml

    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except RecursionError:  # PyYAML composes and constructs recursively: 100,000 `[` deep ends here
        raise yaml.MarkedYAMLError(problem="it is nested too deeply to read — flatten it") from None
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


def dump_yaml(obj: Any, *, flow: bool = False) -> str:
    """YAML in the dialect `safe_load` reads (1.2 scalars: '1e-5' and 'no' quoted as the strings they
    are); `flow`: on one line, `[a, b]` / `{k: v}`, as a form field shows it."""
    import yaml

    return yaml.dump(obj, Dumper=_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=flow)
