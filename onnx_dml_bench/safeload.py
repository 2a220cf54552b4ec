"""Bounded readers of untrusted JSON and YAML files (case files, expectations, fixture metadata,
shrunk cases, triage.json; ``results.py`` bounds its JSONL lines with the same limits).

Result files, case files and expectations travel as CI artifacts and are handed from one person to
another: a reader must fail on a crafted one with one line naming the file and what is wrong, in
bounded time and memory, never with a traceback. The bounds:

* a size limit on the file (``MAX_FILE_BYTES``; read no further than one byte beyond it);
* a nesting-depth limit (``MAX_DEPTH``), checked while YAML is composed and after JSON is decoded
  (deeper than Python's recursion limit is a RecursionError, caught here);
* YAML aliases counted as what they expand to: a document whose nodes, aliases expanded, exceed
  ``MAX_NODES``, or whose scalars, aliases expanded, exceed ``MAX_EXPANDED_BYTES`` of text, is
  refused before anything walks it (the "billion laughs" file: 600 bytes of nested aliases that a
  reader walking it expands to billions of items; a thousand aliases of one long string);
* error messages of one line, cut to ``MAX_MESSAGE`` characters (a value quoted in a message is
  cut too: :func:`brief`).

Knows nothing of the bench: values layer.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import one_line as _one_line

#: the largest file read whole (case files, expectations, metadata): 32 MiB. A hand-written or shrunk
#: case file is kilobytes; explicit input values of a large tensor are megabytes.
MAX_FILE_BYTES = 32 << 20
#: the deepest nesting of lists and mappings accepted (the bench's files nest a few levels)
MAX_DEPTH = 32
#: the most YAML nodes a document may hold, aliases counted as what they expand to
MAX_NODES = 1_000_000
#: the most bytes of text a YAML document's scalars may hold, aliases counted as what they expand to:
#: no more than a file within the size limit holds without aliases (100 aliases of a 1 MiB string
#: would be 100 MiB of values, and a results line of that)
MAX_EXPANDED_BYTES = MAX_FILE_BYTES
#: the longest error message (one line)
MAX_MESSAGE = 400


class UntrustedFileError(ValueError):
    """A file that is not what it should be; the message is one line naming the file."""


def one_line(msg: Any, limit: int = MAX_MESSAGE) -> str:
    """``msg`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    return _one_line(msg, limit)


def brief(v: Any, n: int = 60) -> str:
    """``repr(v)`` for an error message: at most ``n`` characters; a long list or mapping by its size."""
    if isinstance(v, (dict, list, tuple)) and len(v) > 8:
        return f"a {type(v).__name__} of {len(v)} items"
    try:
        r = repr(v)
    except RecursionError:
        return f"a deeply nested {type(v).__name__}"
    return r if len(r) <= n else r[:n - 1] + "…"


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def open_file(path: Path | str, what: str = "file", pipe_ok: bool = False):
    """``path`` open for reading (binary), never blocking on the open: a regular file; with
    ``pipe_ok`` a pipe too (``run --cases <(...)``, ``report <(zcat ...)``: read once, as it comes; a
    named pipe nothing writes into reads as empty). Anything else (a FIFO planted among a folder's
    files, which an open would wait on for ever; a device; a socket; a folder) is OSError with a
    message that names the file and what it is."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or (pipe_ok and stat.S_ISFIFO(mode))):
            raise OSError(errno.EINVAL, f"is {_kind(mode)}, not a {what}: refused"
                         , str(path))
        if getattr(os, "O_NONBLOCK", 0):     # (POSIX; on Windows nothing was made non-blocking)
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, limit: int = MAX_FILE_BYTES, what: str = "file", pipe_ok: bool = False) -> bytes:
    """The bytes of ``path``, refused beyond ``limit`` bytes (nothing larger is read); a regular file
    (with ``pipe_ok``, a pipe too: :func:`open_file`)."""
    path = Path(path)
    try:
        with open_file(path, what, pipe_ok) as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise UntrustedFileError(f"{path}: cannot read: no such file") from None
    except IsADirectoryError:
        raise UntrustedFileError(f"{path}: is a folder, not a {what}") from None
    except OSError as e:
        if e.errno == errno.EINVAL and e.filename == str(path):
            raise UntrustedFileError(f"{path}: {e.strerror}") from None
        raise UntrustedFileError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(data) > limit:
        raise UntrustedFileError(f"{path}: larger than {limit >> 20} MiB: not a {what} this bench reads")
    return data


def read_text(path: Path | str, limit: int = MAX_FILE_BYTES, what: str = "file", pipe_ok: bool = False) -> str:
    """UTF-8 text of ``path`` within ``limit`` bytes."""
    data = read_bytes(path, limit, what, pipe_ok)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UntrustedFileError(f"{path}: not a {what} (byte {e.start} is not UTF-8 text)") from None


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ValueError when lists/mappings in ``value`` nest deeper than ``max_depth`` (iterative)."""
    if not isinstance(value, (dict, list)):
        return
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > max_depth:
            raise ValueError(f"nested deeper than {max_depth} levels")
        for x in (v.values() if isinstance(v, dict) else v):
            if isinstance(x, (dict, list)):
                stack.append((x, d + 1))


def loads_json(text: str | bytes, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """Decoded JSON, or UntrustedFileError naming ``where`` (the file) and what is wrong."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UntrustedFileError(f"{where}: not valid JSON: nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as e:
        raise UntrustedFileError(one_line(f"{where}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}")) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UntrustedFileError(one_line(f"{where}: not valid JSON: {e}")) from None
    try:
        check_depth(value, max_depth)
    except ValueError as e:
        raise UntrustedFileError(f"{where}: not accepted: {e}") from None
    return value


def _loader(max_depth: int, max_nodes: int, max_bytes: int = MAX_EXPANDED_BYTES):
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        """SafeLoader that counts nodes (an alias counts as the nodes it stands for) and depth while
        composing, before any Python object is made."""

        def __init__(self, stream):
            super().__init__(stream)
            self._depth = 0
            self._nodes = 0
            self._bytes = 0
            self._sizes: dict[int, tuple[int, int]] = {}
            self._open: set[str] = set()            # anchors of the nodes being composed

        def _size(self, node) -> tuple[int, int]:
            """(nodes, bytes of scalar text) under ``node``, itself included, aliases expanded
            (memoised: linear in the document)."""
            n = self._sizes.get(id(node))
            if n is not None:
                return n
            if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
                kids = [x for kv in node.value for x in kv] if isinstance(node, yaml.MappingNode) else node.value
                sizes = [self._size(x) for x in kids]
                n = (1 + sum(x[0] for x in sizes), sum(x[1] for x in sizes))
            else:
                n = (1, len(node.value) if isinstance(node.value, str) else 0)
            self._sizes[id(node)] = n
            return n

        def _count(self, n: int, mark, b: int = 0) -> None:
            self._nodes += n
            self._bytes += b
            if self._nodes > max_nodes:
                raise yaml.composer.ComposerError(None, None, f"more than {max_nodes:,} nodes (aliases expanded): "
                                                              f"refused", mark)
            if self._bytes > max_bytes:
                raise yaml.composer.ComposerError(None, None, f"more than {max_bytes >> 20} MiB of text (aliases "
                                                              f"expanded): refused", mark)

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                if event.anchor in self._open:
                    raise yaml.composer.ComposerError(None, None, f"the alias *{event.anchor} refers to a node "
                                                                  "that contains it: refused", event.start_mark)
                node = super().compose_node(parent, index)
                self._count(*self._size(node)[:1], event.start_mark, self._size(node)[1])
                return node
            self._depth += 1
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                self._open.add(anchor)
            try:
                if self._depth > max_depth:
                    raise yaml.composer.ComposerError(None, None, f"nested deeper than {max_depth} levels",
                                                      event.start_mark)
                self._count(1, event.start_mark,
                            len(event.value) if isinstance(event, yaml.ScalarEvent) else 0)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
                if anchor is not None:
                    self._open.discard(anchor)

    return BoundedLoader


def loads_yaml(text: str, where: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
               max_bytes: int = MAX_EXPANDED_BYTES) -> Any:
    """Safe YAML (JSON included) within the bounds; UntrustedFileError with ``where:line:column``."""
    import yaml
    try:
        return yaml.load(text, Loader=_loader(max_depth, max_nodes, max_bytes))   # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise UntrustedFileError(f"{where}: not valid YAML: nested deeper than {max_depth} levels") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        context = getattr(e, "context", None)
        text = f"{context}: {problem}" if context and problem and context not in problem else problem
        raise UntrustedFileError(one_line(f"{where}{at}: not valid YAML: {text}")) from None
    except (ValueError, TypeError, OverflowError) as e:       # a constructor's own error (e.g. a huge date)
        raise UntrustedFileError(one_line(f"{where}: not valid YAML: {type(e).__name__}: {e}")) from None


def load_file(path: Path | str, *, what: str = "file", yaml_ok: bool | None = None,
              limit: int = MAX_FILE_BYTES, max_depth: int = MAX_DEPTH, pipe_ok: bool = False) -> Any:
    """A JSON or YAML file within the bounds. ``yaml_ok``: parse as YAML (None: by the suffix,
    .yaml/.yml); JSON otherwise. ``pipe_ok``: a pipe is read too (:func:`open_file`)."""
    path = Path(path)
    text = read_text(path, limit, what, pipe_ok)
    if yaml_ok is None:        # by the suffix; none (a pipe, /dev/fd/63): YAML, which reads JSON too
        yaml_ok = path.suffix.lower() in (".yaml", ".yml", "")
    if yaml_ok:
        return loads_yaml(text, str(path), max_depth)
    return loads_json(text, str(path), max_depth)
