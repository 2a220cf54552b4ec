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

from .outdir import atomic, named
from .record import IDENTITY_KEYS, CaseRecord, Environment, RecordError, jsonable, parse, to_json

__all__ = ["ResultsError", "ResultWriter", "Results", "read", "latest", "done_ids", "in_shard", "merge", "env_id",
           "combine", "join", "merge_reads", "Completeness", "completeness"]


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
        try:
            for r in records:
                r.env_id = self.env.env_id
                self.f.write(to_json(r) + "\n")
            self.f.flush()
            os.fsync(self.f.fileno())
        except OSError as e:
            self.failed = True       # a full disk: the file ends in what was written whole (resume cuts the rest)
            raise named(e, self.path) from None

    failed = False

    def close(self) -> None:
        try:
            self.f.close()
        except OSError:
            if not self.failed:
                raise


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


def combine(reads: list[Results]) -> tuple[list[Environment], list[CaseRecord]]:
    """Files already read as one: one environment per identity, the last record per (case, EP)."""
    envs: list[Environment] = []
    recs: list[CaseRecord] = []
    for res in reads:
        envs += res.envs
        recs += res.records
    seen: dict[str, Environment] = {}
    for e in envs:
        seen.setdefault(e.env_id, e)
    return list(seen.values()), latest(recs)


def join(paths: list[Path]) -> tuple[list[Environment], list[CaseRecord]]:
    """Several result files as one (see :func:`combine`)."""
    return combine([read(p) for p in paths])


def merge(paths: list[Path], out: Path) -> tuple[int, int]:
    """The files ``paths`` as one results file ``out`` (written whole, then renamed into place).
    Every environment line that stands for a part of a run is kept (a shard's, with its selection
    and its number of cases) and marked ``merged``, so that the merged file still says which part
    is cut short or missing (:func:`completeness`); one identity still counts as one environment."""
    return merge_reads([read(p) for p in paths], out)


def merge_reads(reads: list[Results], out: Path) -> tuple[int, int]:
    """:func:`merge` of files already read."""
    envs, recs = combine(reads)
    parts: dict = {}
    for res in reads:
        for e in res.envs:
            parts.setdefault(_part_key(e), e)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic(out) as f:
        for e in parts.values():
            e.extra["merged"] = True
            f.write(to_json(e) + "\n")
        for r in sorted(recs, key=lambda r: (r.ep, r.case_id)):
            f.write(to_json(r) + "\n")
    return len(envs), len(recs)


# ----------------------------------------------------------------------------------------------
# Is a run whole?
# ----------------------------------------------------------------------------------------------

@dataclass
class Completeness:
    """What the records of some results files are of the runs that wrote them: ``expected`` cases
    (the runs' selections, as their environments record them: ``total_cases``; None when a run
    does not record it), ``found`` of them, and one line per part that is not whole."""
    expected: int | None
    found: int
    missing: list[str]

    @property
    def complete(self) -> bool:
        return not self.missing


def _part_key(e: Environment) -> str:
    """The part of a run an environment line stands for: its environment and its selection (which
    holds the shard). Two runs of one selection in two environments are two parts, each whole or not."""
    sel = e.get("selection")
    return f"{e.env_id}|{e.get('selection_hash') or (sel.get('hash') if isinstance(sel, dict) else None) or e.shard}"


def _shard(spec) -> tuple[int, int] | None:
    try:
        k, n = (int(x) for x in str(spec).split("/"))
    except (TypeError, ValueError):
        return None
    return (k, n) if 1 <= k <= n else None


def completeness(reads: list[Results]) -> Completeness:
    """Whether the records of ``reads`` are every case their runs selected. A run (or shard of a
    run) whose environment records ``total_cases`` and that holds fewer distinct cases was cut
    off; of a run in shards (``--shard K/N``) read together or merged, a shard that is absent is
    missing. Runs written before the bench recorded ``total_cases`` cannot be judged: they count
    as whole, and ``expected`` is None."""
    parts: dict[str, dict] = {}
    by_env: dict[str, list[str]] = {}
    unknown = False
    for res in reads:
        for e in res.envs:
            if not isinstance(e.total_cases, int) or isinstance(e.total_cases, bool):
                unknown = True
                continue
            key = _part_key(e)
            sel = e.get("selection") if isinstance(e.get("selection"), dict) else None
            p = parts.setdefault(key, {"total": e.total_cases, "shard": e.shard, "ep": e.ep, "cases": set(),
                                       "merged": False, "run": None})
            p["total"] = max(p["total"], e.total_cases)
            p["merged"] = p["merged"] or bool(e.get("merged"))
            if sel is not None:       # the run a shard belongs to: its selection less the shard
                p["run"] = json.dumps({k: v for k, v in sel.items() if k not in ("shard", "cases", "hash")},
                                      sort_keys=True, default=str)
            if key not in by_env.setdefault(e.env_id, []):
                by_env[e.env_id].append(key)
    found = 0
    for res in reads:
        for r in res.records:
            keys = by_env.get(r.env_id or "", [])
            if len(keys) > 1:        # shards merged under one environment: the case's own shard
                keys = [k for k in keys if (sh := _shard(parts[k]["shard"])) and in_shard(r.case_id, *sh)] or keys
            if keys:
                parts[keys[0]]["cases"].add(r.case_id)
    missing = []
    for p in parts.values():
        n = len(p["cases"])
        found += n
        if n < p["total"]:
            where = f"{p['ep']}" + (f" shard {p['shard']}" if p["shard"] else "")
            missing.append(f"{where}: {n} of {p['total']} cases; the run was cut off (`run --resume` in its folder "
                           f"completes it)")
    runs: dict = {}
    for p in parts.values():
        sh = _shard(p["shard"])
        if sh is not None and p["run"] is not None:
            r = runs.setdefault((p["run"], sh[1]), {"ep": p["ep"], "have": set(), "parts": 0, "merged": False})
            r["have"].add(sh[0])
            r["parts"] += 1
            r["merged"] = r["merged"] or p["merged"]
    for (_, n), r in runs.items():
        absent = [k for k in range(1, n + 1) if k not in r["have"]]
        if absent and (r["parts"] > 1 or r["merged"]):
            missing.append(f"{r['ep']}: shard{'s' if len(absent) > 1 else ''} "
                           f"{', '.join(f'{k}/{n}' for k in absent)} of the run "
                           f"{'are' if len(absent) > 1 else 'is'} missing (given: "
                           f"{', '.join(f'{k}/{n}' for k in sorted(r['have']))})")
    expected = None if unknown or not parts else sum(p["total"] for p in parts.values())
    return Completeness(expected, found, missing)
