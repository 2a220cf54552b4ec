"""Result files: streamed JSONL (one environment line, then one line per case), resume, shards and
merging. The records are the typed ones of :mod:`record`; this module only reads and writes them.
Nothing here decides a verdict."""
from __future__ import annotations

import contextlib
import errno
import gc
import gzip
import hashlib
import json
import lzma
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from . import crossdevice
from .record import (IDENTITY_KEYS, OPTIONAL_IDENTITY_KEYS, CaseRecord, Environment, OutputStats, RecordError,
                     Timings, cap, jsonable, parse, to_json)
from .outdir import atomic, named, own_file
from .safeload import MAX_FILE_BYTES, one_line, open_file

__all__ = ["ResultsError", "ResultWriter", "Results", "read", "latest", "done_ids", "in_shard", "merge", "env_id",
           "record_key", "combine", "join", "distinguishing", "matching", "env_labels", "verdicts_only",
           "merge_reads", "Completeness", "completeness"]


class ResultsError(ValueError):
    """A results file that cannot be read; the message names the file and line."""


def env_id(env: Environment) -> str:
    """The identity of an environment: everything that can change a verdict."""
    flat = env.flat()
    values = [flat.get(k) for k in IDENTITY_KEYS] + [[k, flat[k]] for k in OPTIONAL_IDENTITY_KEYS if flat.get(k)]
    return hashlib.sha256(json.dumps(jsonable(values), sort_keys=True).encode()).hexdigest()[:12]


class ResultWriter:
    """Appends records to a JSONL file, flushing after every batch. ``others``: the environments of
    the other devices of a run over several (``run --devices``), written after ``env``; a batch of
    their records is written with its environment (``write(records, env)``)."""

    def __init__(self, path: Path, env: Environment, resume: bool = False, others: tuple[Environment, ...] = ()):
        self.path = own_file(path, "results file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.env = env
        mode = "a" if resume and self.path.exists() else "w"
        self.f = None
        try:
            if mode == "a":
                _drop_partial_line(self.path)
            self.f = open(self.path, mode, encoding="utf-8")
            for e in (env, *others):
                e.env_id = env_id(e)
                self.f.write(to_json(e) + "\n")
            self.f.flush()
        except OSError as e:     # a disk still full on --resume: the file named, as for a record
            self.failed = True
            if self.f is not None:
                with contextlib.suppress(OSError):
                    self.f.close()
            raise named(e, self.path) from None

    def write(self, records: list[CaseRecord], env: Environment | None = None) -> None:
        eid = (env or self.env).env_id
        try:
            for r in records:
                r.env_id = eid
                self.f.write(to_json(cap(r)) + "\n")
            self.f.flush()
            os.fsync(self.f.fileno())
        except OSError as e:
            self.failed = True       # a full disk: the file ends in what was written whole (resume cuts the rest)
            raise named(e, self.path) from None

    failed = False

    def close(self) -> None:
        if self.f is None:
            return
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


#: the longest line of a results file: a record is kilobytes (one with a case's explicit input values
#: may be megabytes); a longer line is a crafted or damaged file, refused without reading it whole
MAX_LINE_BYTES = MAX_FILE_BYTES


#: a gzipped results file decompresses to at most this many times its size (results compress 20 to 35
#: times), and never less than GZIP_FLOOR: beyond, a gzip bomb (a megabyte of gzip that is a gigabyte
#: of blank lines kept `report` busy for minutes), refused as it is read
GZIP_RATIO = 100
GZIP_FLOOR = 2 * MAX_FILE_BYTES
#: the same bound for an xz-compressed results file (results compress 35 to 70 times under xz)
XZ_RATIO = 200
#: the first bytes of the two compressed forms a results file may take
GZIP_MAGIC, XZ_MAGIC = b"\x1f\x8b", b"\xfd7zXZ\x00"
#: the most blank lines a results file may hold (the bench writes none)
MAX_BLANK_LINES = 10_000


def _open(path: Path):
    """A binary stream of the file's text (gzip or xz decompressed on the fly: nothing is held whole),
    how many bytes of text it may hold (None: a plain file, bounded by its size on disk) and the
    ratio that bound stands for (0 for a plain file)."""
    if Path(path).is_dir():
        raise ResultsError(f"{path}: is a folder, not a results file (results.jsonl inside it?)")
    try:
        f = open_file(path, "results file", pipe_ok=True)      # `report <(zcat ...)`: read once, as it comes
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path}: is a folder, not a results file (results.jsonl inside it?)") from None
    except OSError as e:
        raise ResultsError(f"{path}: {e.strerror}" if e.errno == errno.EINVAL else
                           f"{path}: cannot be read: {e.strerror or e}") from None
    head = f.peek(len(XZ_MAGIC))[:len(XZ_MAGIC)]      # peeked, not read: a pipe cannot seek back
    size = os.fstat(f.fileno()).st_size
    if head[:2] == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f, mode="rb"), max(GZIP_FLOOR, GZIP_RATIO * size), GZIP_RATIO
    if head == XZ_MAGIC:
        return lzma.LZMAFile(f, mode="rb"), max(GZIP_FLOOR, XZ_RATIO * size), XZ_RATIO
    return f, None, 0


def _lines(path: Path):
    """(line number, text, whether it ended with a newline) of every line; ResultsError for a line
    over MAX_LINE_BYTES, bytes that are not UTF-8 text, a damaged gzip or xz stream."""
    offset = blank = 0
    stream, most, ratio = _open(path)
    kind = "xz" if ratio == XZ_RATIO else "gzip"
    with stream as f:
        i = 0
        while True:
            try:
                raw = f.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as e:
                raise ResultsError(one_line(f"{path}: a damaged {kind} file ({e})")) from None
            if not raw:
                return
            i += 1
            newline = raw.endswith(b"\n")
            if len(raw) > MAX_LINE_BYTES and not newline:
                raise ResultsError(f"{path}:{i}: a line longer than {MAX_LINE_BYTES >> 20} MiB: "
                                   f"not a results file of onnx-dml-bench")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ResultsError(f"{path}: not a results file (byte {offset + e.start} is not UTF-8 text)") from None
            offset += len(raw)
            if most is not None and offset > most:
                raise ResultsError(f"{path}: decompresses to more than {most >> 20} MiB, {ratio} times its "
                                   f"size: {'an xz' if kind == 'xz' else 'a gzip'} bomb, not a results file of onnx-dml-bench (a genuine one: "
                                   f"{'unxz' if kind == 'xz' else 'gunzip'} it and give the .jsonl)")
            if not text.strip():
                blank += 1
                if blank > MAX_BLANK_LINES:
                    raise ResultsError(f"{path}:{i}: more than {MAX_BLANK_LINES:,} blank lines: not a results file "
                                       f"of onnx-dml-bench (it writes none)")
            yield i, text, newline


#: from this many records on, a read's objects are put out of the cyclic collector's sight
FREEZE_RECORDS = 20_000


@contextlib.contextmanager
def without_gc():
    """The cyclic garbage collector paused while records pile up: none holds a reference cycle
    (reference counting frees them), and a collector that walks all of them again and again as
    they pile up, and again after the read, took half of a large read's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def verdicts_only(rec: CaseRecord) -> CaseRecord:
    """``rec`` with only what a comparison of two runs reads (case, EP, environment, operator, data
    type, verdict, attribution, findings, reason, the outputs' max ULP): a read of two large runs
    for ``compare`` holds a fraction of the records (each line is still validated whole)."""
    rec.descriptor, rec.onnx, rec.open_points = {}, {}, []
    rec.labels = [lab for lab in rec.labels if lab.startswith("finding:")] if rec.labels else []
    rec.runs = None
    rec.outputs = {k: OutputStats(o.output, o.kind, o.match, o.total, max_ulp=o.max_ulp, digest=o.digest)
                   for k, o in rec.outputs.items() if o.max_ulp is not None}
    rec.cpu = rec.placement = rec.case = None
    rec.onnx_node = ""
    rec.timings = _NO_TIMINGS
    return rec


_NO_TIMINGS = Timings()


def read(path: Path | str, *, allow_partial: bool = False, keep=None) -> Results:
    """The environments and case records of a JSONL results file (plain, gzipped or xz), streamed.

    Every problem raises :class:`ResultsError` with one line naming the file and line (and the
    field, for a record that is not valid: an unknown verdict, a value of the wrong type). A last
    line without its newline that is not a whole record is an interrupted run: an error unless
    ``allow_partial`` (then it is skipped and named in ``Results.partial``). An empty file, one
    without an environment record, a line longer than MAX_LINE_BYTES or nesting deeper than
    ``record.MAX_DEPTH`` is an error.

    A record without ``env_id`` (written by hand, or by an older bench) belongs to the environment
    line above it. ``keep``: a function each record goes through once read (``verdicts_only``)."""
    with without_gc():
        res = _read(Path(path), allow_partial, keep)
        if len(res.records) >= FREEZE_RECORDS:
            gc.freeze()       # a large read: its records stay out of every later collection (report, compare)
        return res


def _read(path: Path, allow_partial: bool, keep=None) -> Results:
    envs: list[Environment] = []
    recs: list[CaseRecord] = []
    partial = None
    env_of_line = None
    loads, parse_ = json.loads, parse
    strings: dict[str, str] = {}         # the file's texts, each kept once (record.parse)
    for i, line, newline in _lines(path):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except RecursionError:
            raise ResultsError(f"{path}:{i}: not a record (nested too deeply)") from None
        except json.JSONDecodeError as e:
            if not newline and allow_partial:
                partial = f"{path}:{i}: the last line is cut off ({e.msg}); it was skipped"
                break
            hint = " (the last line is cut off: an interrupted run? `run --resume` continues it)" if not newline else ""
            raise ResultsError(f"{path}:{i}: not a JSON record: {e.msg} at column {e.colno}{hint}") from None
        try:
            rec = parse_(obj, "", strings)
        except RecordError as e:
            raise ResultsError(one_line(f"{path}:{i}: {e}")) from None
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as e:
            # a value of a type the record's fields do not take: still one line naming file and line
            raise ResultsError(one_line(f"{path}:{i}: not a valid record ({type(e).__name__}: {e})")) from None
        if type(rec) is CaseRecord:
            if not rec.env_id and env_of_line is not None:
                rec.env_id = env_of_line
            recs.append(rec if keep is None else keep(rec))
        else:
            if not rec.env_id:
                rec.env_id = env_id(rec)
            env_of_line = rec.env_id
            envs.append(rec)
    if not envs:
        raise ResultsError(f"{path}: no environment record: empty, or not a results file of onnx-dml-bench")
    return Results(envs, latest(recs), partial)


def record_key(r: CaseRecord) -> tuple[str, str]:
    """What one record is the verdict of: a case in an environment (its identity, ``env_id``). Two
    runs of one EP on two DirectML.dll builds are two environments, so a case has a record in each."""
    return (r.case_id, r.env_id or r.ep)


def latest(recs: list[CaseRecord]) -> list[CaseRecord]:
    """Keep the last record per (case, environment) (a resumed run may repeat a case)."""
    by: dict = {}
    for r in recs:
        by[(r.case_id, r.env_id or r.ep)] = r
    return list(by.values()) if len(by) != len(recs) else recs


def done_ids(path: Path) -> set[str]:
    if not Path(path).exists():
        return set()
    return {r.case_id for r in read(path, allow_partial=True).records if r.verdict}


def in_shard(case_id: str, k: int, n: int) -> bool:
    """Deterministic slice K of N (1-based), by a hash of the case id."""
    h = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "little")
    return h % n == k - 1


def combine(reads: list[Results]) -> tuple[list[Environment], list[CaseRecord]]:
    """Files already read as one: one environment per identity (``env_id``), the last record per
    (case, environment); runs on two environments stay two, whatever their EPs."""
    envs: list[Environment] = []
    recs: list[CaseRecord] = []
    for res in reads:
        envs += res.envs
        recs += res.records
    seen: dict[str, Environment] = {}
    for e in envs:
        seen.setdefault(e.env_id, e)
    return list(seen.values()), latest(recs)


def join(paths: list[Path], *, allow_partial: bool = False) -> tuple[list[Environment], list[CaseRecord]]:
    """Several result files as one (see :func:`combine`); each file is read once."""
    return combine([read(p, allow_partial=allow_partial) for p in paths])


# ----------------------------------------------------------------------------------------------
# Environments that share an EP: what tells them apart
# ----------------------------------------------------------------------------------------------

def identity_items(env: Environment) -> dict[str, str]:
    """An environment's identity (record.IDENTITY_KEYS) as flat items, mappings spread out
    (``versions.DirectML.dll``, ``ep_options.stack``), each value as JSON text."""
    flat = env.flat()
    out: dict[str, str] = {}
    for k in IDENTITY_KEYS + OPTIONAL_IDENTITY_KEYS:
        v = flat.get(k)
        if isinstance(v, dict):
            for kk, vv in v.items():
                out[f"{k}.{kk}"] = json.dumps(jsonable(vv), sort_keys=True)
        elif v not in (None, ""):
            out[k] = json.dumps(jsonable(v), sort_keys=True)
    return out


def _priority(k: str) -> tuple:
    return ("DirectML.dll" not in k, not k.startswith("versions."), not k.startswith("ep_options."),
            k == "ep_package", k)


def distinguishing(envs: list[Environment]) -> list[str]:
    """The fewest identity items that tell the environments of each EP apart (empty when each EP
    has one environment), chosen in order: DirectML.dll, other versions, EP options, the rest.
    Two runs on two DirectML.dll builds are told apart by ``versions.DirectML.dll`` alone."""
    by_ep: dict[str, list[dict]] = {}
    for e in envs:
        by_ep.setdefault(e.ep, []).append(identity_items(e))
    groups = [items for items in by_ep.values() if len(items) > 1]
    candidates = sorted({k for items in groups for i in items for k in i
                         if len({j.get(k) for j in items}) > 1}, key=_priority)
    keys: list[str] = []

    def distinct(items, ks):
        return len({tuple(i.get(k) for k in ks) for i in items})

    for k in candidates:
        open_groups = [g for g in groups if distinct(g, keys) < len(g)]
        if not open_groups:
            break
        if any(distinct(g, keys + [k]) > distinct(g, keys) for g in open_groups):
            keys.append(k)
    return keys


def matching(sides: list[list[Environment]]) -> tuple[list[str], dict[str, tuple]]:
    """How records of several sides (two runs for ``compare``, two lanes for the four-way view)
    are matched: by case and by the identity items that tell environments of one EP apart on some
    side and that every side records. Returns (those items, env_id -> its values of them)."""
    keys: list[str] = []
    for envs in sides:
        keys += [k for k in distinguishing(envs) if k not in keys]
    items = {e.env_id: identity_items(e) for envs in sides for e in envs}
    keys = [k for k in keys if all(any(k in items[e.env_id] for e in envs) for envs in sides if envs)]
    return keys, {eid: tuple(it.get(k) for k in keys) for eid, it in items.items()}


def env_labels(envs: list[Environment]) -> dict[str, str]:
    """env_id -> a short name of the environment's lane: its EP, and where several environments
    share the EP, what tells them apart (``DirectML (DirectML.dll 1.15.4.0)``)."""
    keys = distinguishing(envs)
    out: dict[str, str] = {}
    for e in envs:
        items = identity_items(e)
        parts = []
        for k in keys:
            if k in items and len(parts) < 3:
                name = k.split(".", 1)[1] if k.startswith(("versions.", "ep_options.")) else k
                v = json.loads(items[k])
                parts.append(f"{name} {v if isinstance(v, (str, int, float)) else items[k]}")
        out[e.env_id] = f"{e.ep} ({', '.join(parts)})" if parts else e.ep
    counts: dict[str, int] = {}
    for label in out.values():
        counts[label] = counts.get(label, 0) + 1
    return {eid: label if counts[label] == 1 else f"{label} [env {eid}]" for eid, label in out.items()}


def rewrite(path: Path, update) -> None:
    """The results file ``path`` written again whole (then renamed into place), its records passed
    through ``update(envs, records)`` first (e.g. a finding given after every device ran a case)."""
    res = read(path)
    update(res.envs, res.records)
    with atomic(Path(path)) as f:
        for e in res.envs:
            f.write(to_json(e) + "\n")
        for r in res.records:
            f.write(to_json(r) + "\n")


def merge(paths: list[Path], out: Path) -> tuple[int, int]:
    """The files ``paths`` as one results file ``out`` (written whole, then renamed into place).
    Every environment line that stands for a part of a run is kept (a shard's, with its selection
    and its number of cases) and marked ``merged``, so that the merged file still says which part
    is cut short or missing (:func:`completeness`); one identity still counts as one environment."""
    return merge_reads([read(p) for p in paths], out)


def merge_reads(reads: list[Results], out: Path) -> tuple[int, int]:
    """:func:`merge` of files already read."""
    envs, recs = combine(reads)
    crossdevice.flag(envs, recs)         # the devices of several hosts, siblings compared
    parts: dict = {}
    for res in reads:
        for e in res.envs:
            parts.setdefault(_part_key(e), e)
    counted = completeness(reads).parts      # each run's cases, known here from the files they came in
    for key, e in parts.items():
        if key in counted:
            e.extra["found_cases"] = counted[key]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic(out) as f:
        for e in parts.values():
            e.extra["merged"] = True
            f.write(to_json(e) + "\n")
        for r in sorted(recs, key=lambda r: (r.ep, r.case_id, r.env_id or "")):
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
    #: part of a run (its environment and selection) -> distinct cases of it found, where known
    parts: dict = field(default_factory=dict)

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
    as whole, and ``expected`` is None.

    A record belongs to a run of its own file: two runs of different selections in one environment
    (two ``--op``s, a run and a re-run of its failures), given as two files, are each judged on
    their own records. In one file that holds several runs of one environment (a merge), a record
    cannot say which run it is of: a shard takes its own cases, a run the merge counted records how
    many of its cases it held (``found_cases``, written by :func:`merge_reads`), and the others are
    judged together (whole when their cases are at least the largest selection)."""
    parts: dict[str, dict] = {}
    unknown = False
    for res in reads:
        for e in res.envs:
            if not isinstance(e.total_cases, int) or isinstance(e.total_cases, bool):
                unknown = True
                continue
            key = _part_key(e)
            sel = e.get("selection") if isinstance(e.get("selection"), dict) else None
            p = parts.setdefault(key, {"total": e.total_cases, "shard": e.shard, "ep": e.ep, "cases": set(),
                                       "merged": False, "run": None, "found": 0, "joint": None})
            p["total"] = max(p["total"], e.total_cases)
            p["merged"] = p["merged"] or bool(e.get("merged"))
            fc = e.get("found_cases")
            if isinstance(fc, int) and not isinstance(fc, bool) and 0 <= fc <= e.total_cases:
                p["found"] = max(p["found"], fc)
            if sel is not None:       # the run a shard belongs to: its selection less the shard
                p["run"] = json.dumps({k: v for k, v in sel.items() if k not in ("shard", "cases", "hash")},
                                      sort_keys=True, default=str)
    glob_env: dict[str, list[str]] = {}          # every file's runs of each environment
    for res in reads:
        for e in res.envs:
            key = _part_key(e)
            if key in parts and key not in glob_env.setdefault(e.env_id, []):
                glob_env[e.env_id].append(key)
    joints: dict[tuple, dict] = {}
    for i, res in enumerate(reads):
        by_env: dict[str, list[str]] = {}       # this file's runs of each environment
        for e in res.envs:
            key = _part_key(e)
            if key in parts and key not in by_env.setdefault(e.env_id, []):
                by_env[e.env_id].append(key)
        for r in res.records:
            keys = by_env.get(r.env_id or "") or glob_env.get(r.env_id or "", [])
            if len(keys) > 1:        # shards merged under one environment: the case's own shard
                keys = [k for k in keys if (sh := _shard(parts[k]["shard"])) and in_shard(r.case_id, *sh)] or keys
            if len(keys) == 1:
                parts[keys[0]]["cases"].add(r.case_id)
            elif keys:               # runs of one environment in one file: which run, the record cannot say
                j = joints.setdefault((i, tuple(keys)), {"keys": keys, "cases": set()})
                j["cases"].add(r.case_id)
    for j in joints.values():
        counted = [k for k in j["keys"] if parts[k]["found"]]
        if len(counted) == len(j["keys"]):
            continue                 # the merge counted each run's cases
        for k in j["keys"]:
            parts[k]["joint"] = j
    found = 0
    missing = []
    done_joint: set[int] = set()
    for p in parts.values():
        j = p["joint"]
        if j is not None:
            if id(j) in done_joint:
                continue
            done_joint.add(id(j))
            group = [parts[k] for k in j["keys"]]
            n, need = len(j["cases"] | set().union(*(q["cases"] for q in group))), max(q["total"] for q in group)
            found += n
            if n < need:
                missing.append(f"{p['ep']}: {n} of at least {need} cases of {len(group)} runs in one environment; "
                               f"a run was cut off (`run --resume` in its folder completes it)")
            continue
        p["cases_found"] = max(len(p["cases"]), p["found"])
    for p in parts.values():
        if p["joint"] is not None:
            continue
        n = p["cases_found"]
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
    return Completeness(expected, found, missing,
                        {k: p["cases_found"] for k, p in parts.items() if p["joint"] is None})
