"""Result files: streamed JSONL (one environment line, then one line per case), resume, shards and
merging. The records are the typed ones of :mod:`record`; this module only reads and writes them.
Nothing here decides a verdict."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from .record import IDENTITY_KEYS, CaseRecord, Environment, RecordError, cap, jsonable, parse, to_json

__all__ = ["ResultsError", "ResultWriter", "Results", "read", "latest", "done_ids", "in_shard", "merge", "env_id"]


class ResultsError(ValueError):
    """A results file that cannot be read; the message names the file and line."""


def env_id(env: Environment) -> str:
    """The identity of an environment: everything that can change a verdict."""
    flat = env.flat()
    return hashlib.sha256(json.dumps(jsonable([flat.get(k) for k in IDENTITY_KEYS]),
                                     sort_keys=True).encode()).hexdigest()[:12]


class ResultWriter:
    """Appends records to a JSONL file, flushing after every batch."""

    def __init__(self, path: Path, env: Environment, resume: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.env = env
        self.env.env_id = env_id(env)
        mode = "a" if resume and self.path.exists() else "w"
        if mode == "a":
            _drop_partial_line(self.path)
        self.f = open(self.path, mode, encoding="utf-8")
        self.f.write(to_json(self.env) + "\n")
        self.f.flush()

    def write(self, records: list[CaseRecord]) -> None:
        for r in records:
            r.env_id = self.env.env_id
            self.f.write(to_json(cap(r)) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def _drop_partial_line(path: Path) -> None:
    """An interrupted run may leave a half-written last line: cut it before appending."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


@dataclass
class Results:
    """What :func:`read` found in one file."""
    envs: list[Environment]
    records: list[CaseRecord]
    partial: str | None = None          # the truncated last line's problem, when allowed


def _lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path}: is a folder, not a results file (results.jsonl inside it?)") from None
    except OSError as e:
        raise ResultsError(f"{path}: cannot be read: {e.strerror or e}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise ResultsError(f"{path}: a damaged gzip file ({e})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not a results file (byte {e.start} is not UTF-8 text)") from None
    return text.split("\n")


def read(path: Path | str, *, allow_partial: bool = False) -> Results:
    """The environments and case records of a JSONL results file (plain or gzipped).

    Every problem raises :class:`ResultsError` naming the file and line. A last line without its
    newline that is not a whole record is an interrupted run: an error unless ``allow_partial``
    (then it is skipped and named in ``Results.partial``). An empty file, or one without an
    environment record, is an error."""
    path = Path(path)
    lines = _lines(path)
    envs: list[Environment] = []
    recs: list[CaseRecord] = []
    partial = None
    last = len(lines)
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{i}"
        try:
            obj = json.loads(line)
        except RecursionError:
            raise ResultsError(f"{where}: not a record (nested too deeply)") from None
        except json.JSONDecodeError as e:
            if i == last and allow_partial:
                partial = f"{where}: the last line is cut off ({e.msg}); it was skipped"
                break
            hint = " (the last line is cut off: an interrupted run? `run --resume` continues it)" if i == last else ""
            raise ResultsError(f"{where}: not a JSON record: {e.msg} at column {e.colno}{hint}") from None
        try:
            rec = parse(obj)
        except RecordError as e:
            raise ResultsError(f"{where}: {e}") from None
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as e:
            # a value of a type the record's fields do not take: still one line naming file and line
            raise ResultsError(f"{where}: not a valid record ({type(e).__name__}: {e})") from None
        (envs if isinstance(rec, Environment) else recs).append(rec)
    if not envs:
        raise ResultsError(f"{path}: no environment record: empty, or not a results file of onnx-dml-bench")
    return Results(envs, latest(recs), partial)


def latest(recs: list[CaseRecord]) -> list[CaseRecord]:
    """Keep the last record per (case, EP) (a resumed run may repeat a case)."""
    by: dict = {}
    for r in recs:
        by[(r.case_id, r.ep)] = r
    return list(by.values())


def done_ids(path: Path) -> set[str]:
    if not Path(path).exists():
        return set()
    return {r.case_id for r in read(path, allow_partial=True).records if r.verdict}


def in_shard(case_id: str, k: int, n: int) -> bool:
    """Deterministic slice K of N (1-based), by a hash of the case id."""
    h = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "little")
    return h % n == k - 1


def join(paths: list[Path]) -> tuple[list[Environment], list[CaseRecord]]:
    """Several result files as one: one environment per identity, the last record per (case, EP)."""
    envs: list[Environment] = []
    recs: list[CaseRecord] = []
    for p in paths:
        res = read(p)
        envs += res.envs
        recs += res.records
    seen: dict[str, Environment] = {}
    for e in envs:
        seen.setdefault(e.env_id, e)
    return list(seen.values()), latest(recs)


def merge(paths: list[Path], out: Path) -> tuple[int, int]:
    envs, recs = join(paths)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:      # written whole, then renamed: never half a file
        for e in envs:
            f.write(to_json(e) + "\n")
        for r in sorted(recs, key=lambda r: (r.ep, r.case_id)):
            f.write(to_json(r) + "\n")
    os.replace(tmp, out)
    return len(envs), len(recs)
