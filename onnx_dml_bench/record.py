"""Typed result records: the verdict of one case on one EP (:class:`CaseRecord`) and the
environment of a run (:class:`Environment`), with one JSON writer and one reader.

Dataclasses from the standard library, not a validation library: records are made by the bench
itself (the reader only has to refuse what is not one), and the bench must import on machines
that have only numpy, onnx and the ONNX Runtime package (GPU images, Windows Python under Wine)
with no package registry at hand. :func:`from_json` walks the type hints, so the schema is the
class definitions below and nothing else.

The verdicts and EP-vs-CPU findings a record names are :class:`Verdict` and :class:`Finding`:
their names, which verdicts belong together, the default ``--fail-on`` and their colours.

Schema versions: ``onnx-dml-bench/result/2`` is written; ``/1`` (the bench's first release) is
read and upgraded (:func:`_upgrade_v1`); any other is refused with a message naming it.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

SCHEMA = "onnx-dml-bench/result/2"
SCHEMA_V1 = "onnx-dml-bench/result/1"
READABLE_SCHEMAS = (SCHEMA_V1, SCHEMA)


# ----------------------------------------------------------------------------------------------
# Verdicts and findings
# ----------------------------------------------------------------------------------------------

class Verdict(str, enum.Enum):
    """The verdict of a case. A record stores its name as a plain string (``Verdict.FAIL ==
    "FAIL"``), so JSON and every reader see strings. The class is the one place that says which
    verdicts belong together (the tuples below the class, e.g. ``Verdict.COMPARED``), which of
    them fail a run by default (``Verdict.FAIL_ON``) and how each is coloured (``style``,
    ``colour``); iterating over it gives the order in which reports list verdicts."""
    PASS = "PASS"
    FAIL = "FAIL"
    FLAKY = "FLAKY"
    NOT_OFFLOADED = "NOT_OFFLOADED"
    EP_REJECTED = "EP_REJECTED"
    EP_ERROR = "EP_ERROR"
    ERROR = "ERROR"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"
    NOT_EXPRESSIBLE = "NOT_EXPRESSIBLE"
    NOT_SUPPORTED = "NOT_SUPPORTED"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def style(self) -> str:
        """Its colour on a terminal (a rich style)."""
        return _PALETTE[self][0]

    @property
    def colour(self) -> str:
        """Its colour in the HTML reports (CSS)."""
        return _PALETTE[self][1]

    # The groupings (tuples of members, in the order options and messages list them; set below
    # the class, where an Enum's body no longer turns each value into a member):
    #: outputs compared with the reference
    COMPARED: ClassVar[tuple[Verdict, ...]]
    #: the worker died on the case or did not answer in time
    LOST: ClassVar[tuple[Verdict, ...]]
    #: the case could not be checked (JUnit <error>): the EP failed at run time, or the case was lost
    #: or could not be built
    ERRORS: ClassVar[tuple[Verdict, ...]]
    #: wrong or broken: what fails a pytest item and what ``triage`` takes by default
    FAILED: ClassVar[tuple[Verdict, ...]]
    #: the verdicts ``--fail-on`` names by default
    FAIL_ON: ClassVar[tuple[Verdict, ...]]
    #: the EP did not take the case (a capability statement, not a wrong answer)
    NOT_TAKEN: ClassVar[tuple[Verdict, ...]]
    #: a side without outputs whose session or run refused the case (neither a crash nor a hang)
    REFUSED: ClassVar[tuple[Verdict, ...]]
    #: never handed to an EP (counted, not run)
    NOT_SENT: ClassVar[tuple[Verdict, ...]]
    #: handed to the EP under test (a session was attempted)
    SENT_TO_EP: ClassVar[tuple[Verdict, ...]]
    #: nothing ran on the EP (JUnit <skipped> unless listed in fail_on; a skipped pytest item)
    NOT_RUN: ClassVar[tuple[Verdict, ...]]


Verdict.COMPARED = (Verdict.PASS, Verdict.FAIL, Verdict.FLAKY)
Verdict.LOST = (Verdict.CRASH, Verdict.TIMEOUT)
Verdict.ERRORS = (Verdict.EP_ERROR,) + Verdict.LOST + (Verdict.ERROR,)
Verdict.FAILED = (Verdict.FAIL, Verdict.FLAKY) + Verdict.ERRORS
Verdict.FAIL_ON = (Verdict.FAIL, Verdict.FLAKY, Verdict.EP_ERROR) + Verdict.LOST
Verdict.NOT_TAKEN = (Verdict.NOT_OFFLOADED, Verdict.EP_REJECTED)
#: (EP_ERROR: a run the session accepted and then refused; ERROR: so recorded before EP_ERROR existed)
Verdict.REFUSED = (Verdict.EP_REJECTED, Verdict.EP_ERROR, Verdict.ERROR)
Verdict.NOT_SENT = (Verdict.NOT_EXPRESSIBLE, Verdict.NOT_SUPPORTED)
Verdict.SENT_TO_EP = tuple(v for v in Verdict if v not in Verdict.NOT_SENT)
Verdict.NOT_RUN = Verdict.NOT_TAKEN + Verdict.NOT_SENT

#: verdict -> (terminal style, report colour)
_PALETTE = {
    Verdict.PASS: ("green", "#1a7f37"),
    Verdict.FAIL: ("red", "#cf222e"),
    Verdict.FLAKY: ("bold magenta", "#d4358a"),
    Verdict.NOT_OFFLOADED: ("magenta", "#bc4c00"),
    Verdict.EP_REJECTED: ("yellow", "#8250df"),
    Verdict.EP_ERROR: ("bold dark_orange", "#0a7ea4"),
    Verdict.ERROR: ("red", "#a40e26"),
    Verdict.CRASH: ("bold red", "#6e0b1c"),
    Verdict.TIMEOUT: ("bold red", "#9a6700"),
    Verdict.NOT_EXPRESSIBLE: ("cyan", "#8c959f"),
    Verdict.NOT_SUPPORTED: ("blue", "#6639ba"),
}

#: the verdict names, in report order (plain strings)
VERDICTS = tuple(v.value for v in Verdict)
#: the label of a case whose batch lost its worker (crash, hang, error) and was run again in
#: parts; ``CaseRecord.rerun`` says what happened and which case was at fault
#: the label of a record judged from outputs produced outside the bench (``judge``): its placement
#: is the user's word, not observed
PLACEMENT_LABEL = "placement:asserted"
PLACEMENT_LABEL_TEXT = ("The outputs were produced outside the bench (onnx-dml-bench judge): the EP is the one the "
                        "user names, where the nodes ran was not observed.")
#: the placement proof of such a record, and of its environment
PLACEMENT_ASSERTED = ("not proven: the outputs were produced outside the bench; the EP is the one the user names "
                      "(judge --ep), where the nodes ran was not observed")
RERUN_LABEL = "batch-rerun"
RERUN_LABEL_TEXT = ("The batch this case ran in lost its worker (a crash, a hang or an error) and was run again "
                    "in parts; the case's detail says what happened and which case was at fault.")
ATTRIBUTIONS = ("EP_WRONG", "CPU_WRONG", "BOTH_WRONG", "REFERENCE_DISPUTED")


class Finding(str, enum.Enum):
    """Findings a record can carry whatever its verdict (``--fail-on`` may gate on them); stored,
    like verdicts, as plain strings. A record's ``finding`` is the first of its findings in this
    order; its labels name every one (``finding:<name>``, :attr:`CaseRecord.findings`)."""
    #: the case failed in a session shared with other cases, again when that session ran again,
    #: and passed alone (its own model and session): state leaking between the nodes of one session
    BATCH_DEPENDENT = "BATCH_DEPENDENT"
    #: identical runs of one session (``--repeat``) gave outputs that differ bit for bit
    NONDETERMINISTIC = "NONDETERMINISTIC"
    #: the CPU EP is outside every allowed answer where the EP under test is not
    CPU_WRONG = "CPU_WRONG"
    #: the two differ bit for bit although each is allowed (another open-point alternative,
    #: another rounding within the error bound)
    EP_CPU_DIFFER = "EP_CPU_DIFFER"
    #: a device's outputs differ bit for bit from those of its siblings (devices of the same model,
    #: driver and build) on the same case (``crossdevice.flag``, after every device has run it)
    DEVICE_DIFFERS = "DEVICE_DIFFERS"

    __str__ = str.__str__
    __format__ = str.__format__


#: the finding names, in report order (plain strings)
FINDINGS = tuple(f.value for f in Finding)
#: what ``--fail-on`` names by default: the verdicts of ``Verdict.FAIL_ON`` and the findings of a
#: wrong answer of the EP under test that its verdict does not show
FAIL_ON_DEFAULT = tuple(v.value for v in Verdict.FAIL_ON) + (Finding.BATCH_DEPENDENT.value,
                                                              Finding.DEVICE_DIFFERS.value)


class RecordError(ValueError):
    """A JSON object that is not a valid record; ``where`` names the field."""

    def __init__(self, where: str, what: str):
        self.where, self.what = where, what
        where = where if len(where) <= 200 else where[:199] + "…"      # a crafted key stays one short line
        super().__init__(f"{where}: {what}" if where else what)


# ----------------------------------------------------------------------------------------------
# JSON-safe values (the one converter of the package)
# ----------------------------------------------------------------------------------------------

def jsonable(v: Any, signed_zero: bool = True) -> Any:
    """A JSON-safe copy: NaN and infinities as the strings "nan", "inf", "-inf" (JSON has none of
    them), -0.0 as "-0.0" (JSON readers lose its sign; ``signed_zero=False`` keeps it a number),
    NumPy scalars as Python scalars, tuples as lists, dataclasses as dicts."""
    t = type(v)                     # the common exact types first, inline: reports convert millions of values
    if t in _PLAIN:
        return v
    if t is list or t is tuple:
        return [x if type(x) in _PLAIN else jsonable(x, signed_zero) for x in v]
    if t is dict:
        return {k if type(k) is str else str(k): x if type(x) in _PLAIN else jsonable(x, signed_zero)
                for k, x in v.items()}
    if t is float:
        if v != v:
            return "nan"
        if v in (_INF, _NEG_INF):
            return "inf" if v > 0 else "-inf"
        if signed_zero and v == 0.0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: jsonable(getattr(v, f.name), signed_zero) for f in dataclasses.fields(v)}
    if hasattr(v, "item") and not isinstance(v, (list, tuple, dict, str)):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if signed_zero and v == 0.0 and math.copysign(1.0, v) < 0:
            return "-0.0"
        return v
    if isinstance(v, dict):
        return {str(k): jsonable(x, signed_zero) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x, signed_zero) for x in v]
    return v


_INF, _NEG_INF = math.inf, -math.inf
_PLAIN = frozenset((str, int, bool, type(None)))


def number(v: Any) -> Any:
    """Inverse of :func:`jsonable` for one scalar: "nan", "inf", "-inf", "-0.0" back to floats."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


# ----------------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------------

@dataclass
class OutputStats:
    """One output of one implementation compared with the reference."""
    output: str
    kind: str                                # exact | ulp | indices
    match: bool
    total: int
    mismatches: int = 0
    max_abs: float | None = None             # largest |got - ref| over finite pairs; inf if an infinity meets a finite value
    max_ulp: int | None = None               # largest ULP distance over non-NaN pairs (float outputs)
    tolerance_ulp: int = 0
    min_passing_ulp: int | None = None       # smallest ULP tolerance that would pass (None: none would)
    nan_mismatches: int = 0                  # NaN on one side only (no distance is defined there)
    bound_ratio: float | None = None         # kind 'bound': largest |got - ref| / admissible error
    alternative: str | None = None           # the allowed behaviour of an open point this output matched
    labels: list[str] = field(default_factory=list)
    first: list[dict] = field(default_factory=list)   # first mismatches: index, got, ref, cpu
    heatmap: list[list[int]] | None = None
    note: str = ""
    digest: str | None = None                # a hash of the output's bytes, dtype and shape (devices compared bit for bit)


@dataclass
class CpuSide:
    """ONNX Runtime's CPU EP on the same case (the second implementation). ``labels``: the known
    deviations of the CPU EP that explain what it did (``known-deviation:<key>``), on this side
    whatever the EP under test did."""
    build: str
    verdict: str | None = None
    reason: str = ""
    outputs: dict[str, OutputStats] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)


@dataclass
class Placement:
    """Where the case's nodes ran, and how that is known."""
    fallback_disabled: bool
    nodes: dict[str, str] | None = None      # node (without batch prefix) -> EP
    proof: str = ""
    became: list[str] | None = None          # for a node the session replaced: the session's nodes that
                                             # no graph node names (function body, EP rewrite), with their EP


@dataclass
class Timings:
    batch_size: int | None = None
    session_ms: float | None = None
    run_ms: float | None = None
    reference_ms: float | None = None


@dataclass
class Runs:
    """How a verdict was reached when the case ran more than once: ``repeat`` identical runs of
    its session (``--repeat``), and, for a case that failed in a session shared with other cases,
    its runs alone (its own model and session). Verdicts per run, in order."""
    repeat: int = 1
    batch_size: int = 1                       # cases in the session of the first runs
    batch: list[str] = field(default_factory=list)          # the verdict of each run in that session
    alone: list[str] | None = None            # the verdict of each run alone (None: not re-run alone)
    differ: dict[str, int] = field(default_factory=dict)    # output -> elements that differ between runs
    batch_reason: str = ""                    # what the shared session gave, where the verdict is the alone runs'
    note: str = ""


@dataclass
class CaseRecord:
    """The verdict of one case on one EP."""
    case_id: str
    op: str
    dml_op: str
    dtype: str
    opset: int
    family: str
    seed: int
    descriptor: dict[str, Any]
    ep: str
    verdict: str
    onnx: dict[str, Any] = field(default_factory=dict)
    attribution: str | None = None
    finding: str | None = None               # one of FINDINGS, or None
    reason: str = ""
    labels: list[str] = field(default_factory=list)
    open_points: list[str] = field(default_factory=list)
    outputs: dict[str, OutputStats] = field(default_factory=dict)
    cpu: CpuSide | None = None
    placement: Placement | None = None
    timings: Timings = field(default_factory=Timings)
    onnx_node: str = ""
    case: dict[str, Any] | None = None       # the case file entry, for cases with explicit values
    runs: Runs | None = None                 # repeated runs and the re-run alone, where there were any
    #: None: the graph is the direct image of ``descriptor`` (or the operator does not tell); else
    #: why no DirectML descriptor expresses it exactly (``descriptor`` is then the nearest one)
    dml_image: str | None = None
    #: where the case comes from (``cases.Case.source``): a ``networks`` case's census layer, exporter
    #: and source models; the boundary a ``limits`` case probes
    source: dict[str, Any] | None = None
    #: how the case came to be run again: its batch's worker died, hung or failed, the batch was
    #: split and run again until the case at fault was alone (named here); empty when run once
    rerun: str = ""
    env_id: str | None = None
    record: str = "case"

    @property
    def findings(self) -> tuple[str, ...]:
        """Every finding of the record: its ``finding`` and those its labels name."""
        if self.finding is None and not any(lab.startswith("finding:") for lab in self.labels):
            return ()
        found = {lab[8:] for lab in self.labels if lab.startswith("finding:")} | {self.finding}
        return tuple(f for f in FINDINGS if f in found)

    @property
    def max_ulp(self) -> int | None:
        vals = [o.max_ulp for o in self.outputs.values() if o.max_ulp is not None]
        return max(vals) if vals else None


@dataclass
class Environment:
    """What a run records about where it ran. ``extra`` keeps what an EP's preflight adds
    (DirectML's stack versions, canary, statements, plugin device metadata, ...)."""
    ep: str
    ep_key: str = ""
    ort_package: str = ""
    ort_version: str = ""
    ep_package: str = ""
    ep_options: dict[str, Any] = field(default_factory=dict)
    device: str = ""
    driver: str = ""
    os: str = ""
    platform: str = ""
    machine: str = ""
    cpu: str = ""
    python: str = ""
    versions: dict[str, Any] = field(default_factory=dict)
    bench_version: str = ""
    git_revision: str | None = None
    profile: str = ""
    cases_file: str | None = None
    opset_mode: str = ""
    optimization: str = "disabled"
    shard: str | None = None
    seed_policy: str = ""
    started: str = ""
    argv: list[str] = field(default_factory=list)
    not_expressible: list[dict] = field(default_factory=list)
    three_way: bool = True
    nan_policy: str = ""
    total_cases: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    env_id: str = ""
    schema: str = SCHEMA
    record: str = "environment"

    def get(self, key: str, default: Any = None) -> Any:
        """A field or an ``extra`` key by name (what a report shows as one list of rows)."""
        if key in _ENV_FIELDS and key != "extra":
            return getattr(self, key)
        return self.extra.get(key, default)

    def flat(self) -> dict[str, Any]:
        """Fields and extras as one mapping (extras never shadow a field)."""
        d = {k: getattr(self, k) for k in _ENV_FIELDS if k != "extra"}
        return {**self.extra, **d}

    @classmethod
    def from_flat(cls, d: dict[str, Any]) -> "Environment":
        known = {k: v for k, v in d.items() if k in _ENV_FIELDS and k != "extra"}
        extra = {k: v for k, v in d.items() if k not in _ENV_FIELDS}
        return from_json(cls, {**known, "extra": {**dict(d.get("extra") or {}), **extra}})


_ENV_FIELDS = tuple(f.name for f in dataclasses.fields(Environment))   # in declaration order: summaries stable run to run

#: what makes two runs' verdicts comparable: any difference here is a different environment
IDENTITY_KEYS = ("machine", "os", "cpu", "ort_package", "ort_version", "ep", "ep_options", "ep_package", "device",
                 "driver", "optimization", "three_way", "versions")
#: identity keys an environment has only where it holds them: ``device_unit``, the one device of a
#: host a run used (``run --devices``: index, name, UUID, PCI bus id); absent, the identity is as before
OPTIONAL_IDENTITY_KEYS = ("device_unit",)


# ----------------------------------------------------------------------------------------------
# The size of a record
# ----------------------------------------------------------------------------------------------

#: what a record keeps of a failing output, whatever the tensor's size: its statistics, at most
#: RECORD_FIRST first mismatches and a heatmap of at most RECORD_HEATMAP cells a side (a larger one
#: is summed in blocks); the CPU EP side keeps its statistics and labels (the EP side's first
#: mismatches show the CPU EP's values at the same places)
RECORD_FIRST = 10
RECORD_HEATMAP = 16


def _shrunk_heatmap(grid: list[list[int]] | None) -> list[list[int]] | None:
    if not grid:
        return grid
    h, w = len(grid), len(grid[0])
    fh, fw = -(-h // RECORD_HEATMAP), -(-w // RECORD_HEATMAP)
    if fh == 1 and fw == 1:
        return grid
    return [[sum(grid[y][x] for y in range(by, min(h, by + fh)) for x in range(bx, min(w, bx + fw)))
             for bx in range(0, w, fw)] for by in range(0, h, fh)]


def cap(rec: "CaseRecord") -> "CaseRecord":
    """``rec`` within the size a record keeps (RECORD_FIRST, RECORD_HEATMAP, the CPU side's
    statistics only), in place; returned for convenience."""
    for o in rec.outputs.values():
        del o.first[RECORD_FIRST:]
        o.heatmap = _shrunk_heatmap(o.heatmap)
    if rec.cpu is not None:
        for o in rec.cpu.outputs.values():
            o.first = []
            o.heatmap = None
    return rec


# ----------------------------------------------------------------------------------------------
# One writer, one reader
# ----------------------------------------------------------------------------------------------

def to_json(rec: CaseRecord | Environment) -> str:
    """One JSON line. Environments are written flat (extras beside the fields)."""
    obj = rec.flat() if isinstance(rec, Environment) else rec
    return json.dumps(jsonable(obj), allow_nan=False, ensure_ascii=False)


def parse(obj: Any, where: str = "", strings: dict[str, str] | None = None) -> CaseRecord | Environment:
    """A record from one decoded JSON line; :class:`RecordError` names what is wrong.
    ``strings``: a table the texts of the records of one file are kept in once (see ``_strings``)."""
    global _strings
    _strings = {} if strings is None else strings
    if not isinstance(obj, dict):
        raise RecordError(where, f"not a JSON object but {type(obj).__name__}")
    kind = obj.get("record")
    if kind == "environment":
        schema = obj.get("schema", SCHEMA_V1)
        if schema not in READABLE_SCHEMAS:
            raise RecordError(where, f"results schema {schema!r} is not one this version reads "
                                     f"({', '.join(READABLE_SCHEMAS)}); use the bench version that wrote it")
        if "ep" not in obj:
            raise RecordError(where, "environment record without 'ep'")
        return Environment.from_flat({**obj, "schema": SCHEMA})
    if kind not in ("case", None):
        raise RecordError(where, f"unknown record kind {kind!r} (expected 'environment' or 'case')")
    if "case_id" not in obj:
        raise RecordError(where, "not a result record (no 'case_id'); is this a results.jsonl file of onnx-dml-bench?")
    if obj.get("cpu") and isinstance(obj["cpu"], dict) and any(
            isinstance(o, dict) and "kind" not in o for o in (obj["cpu"].get("outputs") or {}).values()):
        obj = _upgrade_v1(obj)
    return from_json(CaseRecord, obj, where)


def _upgrade_v1(obj: dict) -> dict:
    """Schema 1 stored the CPU side's outputs as summaries without name and kind."""
    obj = dict(obj)
    cpu = dict(obj["cpu"])
    kinds = {k: (o or {}).get("kind", "exact") for k, o in (obj.get("outputs") or {}).items()}
    cpu["outputs"] = {k: {"output": k, "kind": kinds.get(k, "exact"), **o} for k, o in (cpu.get("outputs") or {}).items()}
    obj["cpu"] = cpu
    return obj


#: the fields whose values are names from a closed list, and the list (an unknown name is refused:
#: a reader that counted it would count it wrongly, e.g. an unknown verdict as a regression)
CLOSED_VALUES = {
    ("CaseRecord", "verdict"): VERDICTS,
    ("CaseRecord", "attribution"): ATTRIBUTIONS,
    ("CaseRecord", "finding"): FINDINGS,
    ("CpuSide", "verdict"): VERDICTS,
}
#: how deeply a free-form value (a descriptor, ONNX options, versions, ...) may nest; a record's own
#: structure is at most a few levels deep, so anything deeper is a crafted file
MAX_DEPTH = 32


def _within(e: RecordError, part: str) -> RecordError:
    """``e`` one level further out: ``part`` is a field name or ``[i]``."""
    w = e.where
    return RecordError(part if not w else (f"{part}{w}" if w.startswith("[") else f"{part}.{w}"), e.what)


def _brief(v: Any, n: int = 60) -> str:
    """``repr(v)`` cut to ``n`` characters (an error message stays one short line)."""
    if isinstance(v, (dict, list)) and len(v) > 8:
        return f"a {type(v).__name__} of {len(v)} items"
    r = repr(v)
    return r if len(r) <= n else r[:n - 1] + "…"


#: the strings of the records being read, each kept once (records repeat the same texts: operator,
#: EP, kinds, the CPU side's build, placement proofs, descriptor keys; a read of 200,000 records
#: holds each once instead of 200,000 times). ``results.read`` gives each file its own table.
_strings: dict[str, str] = {}


def _same(s: str) -> str:
    return _strings.setdefault(s, s)


def _any(data: Any, depth: int = 1) -> Any:
    """A free-form JSON value (strings kept once), refused when it nests deeper than MAX_DEPTH."""
    t = type(data)
    if t is str:
        return _strings.setdefault(data, data)
    if t is dict:
        if depth > MAX_DEPTH:
            raise RecordError("", f"nested deeper than {MAX_DEPTH} levels")
        same = _strings.setdefault
        return {same(k, k): (same(v, v) if type(v) is str else v if type(v) not in (dict, list) else _any(v, depth + 1))
                for k, v in data.items()}
    if t is list:
        if depth > MAX_DEPTH:
            raise RecordError("", f"nested deeper than {MAX_DEPTH} levels")
        for x in data:
            if type(x) in (dict, list, str):
                return [_any(v, depth + 1) for v in data]
        return data
    return data


def _scalar(tp: Any) -> Callable[[Any], Any]:
    if tp is float:
        def parse_float(data):
            t = type(data)
            if t is float or t is int:
                return float(data)
            data = number(data)
            if isinstance(data, bool) or not isinstance(data, (int, float)):
                raise RecordError("", f"expected a number, got {_brief(data)}")
            return float(data)
        return parse_float
    if tp is int:
        def parse_int(data):
            if type(data) is not int:
                if isinstance(data, bool) or not isinstance(data, int):
                    raise RecordError("", f"expected an integer, got {_brief(data)}")
            return data
        return parse_int
    if tp is bool:
        def parse_bool(data):
            if type(data) is not bool:
                raise RecordError("", f"expected true or false, got {_brief(data)}")
            return data
        return parse_bool
    if tp is str:
        def parse_str(data):
            if type(data) is not str:
                if not isinstance(data, str):
                    raise RecordError("", f"expected a string, got {_brief(data)}")
                data = str(data)
            return _strings.setdefault(data, data)
        return parse_str
    return _any


def _closed(inner: Callable[[Any], Any], allowed: tuple[str, ...], what: str) -> Callable[[Any], Any]:
    known = frozenset(allowed)

    def parse_closed(data):
        v = inner(data)
        if v is not None and v not in known:
            raise RecordError("", f"unknown {what} {_brief(v)} (known: {', '.join(allowed)})")
        return v
    return parse_closed


#: field types whose common case the dataclass parser checks inline: 1 str, 2 float, 3 int
_KINDS = {str: 1, float: 2, int: 3}


def _dataclass_parser(tp: type) -> Callable[[Any], Any]:
    """The parser of one dataclass, built once from its type hints: per field, whether it takes
    None, whether it is a plain string (the common case, checked inline) and the value's parser."""
    hints = typing.get_type_hints(tp)
    fields: dict[str, tuple[bool, bool, Callable]] = {}
    required = []
    for f in dataclasses.fields(tp):
        hint = hints[f.name]
        args = typing.get_args(hint)
        optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
        if optional:
            hint = typing.Union[tuple(a for a in args if a is not type(None))]
        fp = _parser(hint)
        allowed = CLOSED_VALUES.get((tp.__name__, f.name))
        if allowed is not None:
            fp = _closed(fp, allowed, f.name)
        kind = 0 if allowed is not None else _KINDS.get(hint, 0)
        fields[f.name] = (optional, kind, fp)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    required_set = frozenset(required)

    def parse_dataclass(data):
        if type(data) is not dict:
            raise RecordError("", f"expected an object, got {type(data).__name__}")
        kwargs = {}
        same = _strings.setdefault
        get = fields.get
        for name, v in data.items():
            spec = get(name)
            if spec is None:                 # a key of a later schema: ignored
                continue
            optional, kind, fp = spec
            t = type(v)
            if v is None and optional:
                kwargs[name] = None
            elif kind == 1 and t is str:
                kwargs[name] = same(v, v)
            elif kind == 2 and t is float:
                kwargs[name] = v
            elif kind == 3 and t is int:
                kwargs[name] = v
            elif kind == 2 and t is int:
                kwargs[name] = float(v)
            else:
                try:
                    kwargs[name] = fp(v)
                except RecordError as e:
                    raise _within(e, name) from None
        if not required_set.issubset(kwargs):
            raise RecordError(next(n for n in required if n not in kwargs), "is missing")
        return tp(**kwargs)
    return parse_dataclass


def _build(tp: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return _any
    if origin in (typing.Union, types.UnionType):
        inner = _parser([a for a in args if a is not type(None)][0])
        if type(None) not in args:
            return inner

        def parse_optional(data):
            return None if data is None else inner(data)
        return parse_optional
    if dataclasses.is_dataclass(tp):
        return _dataclass_parser(tp)
    if origin is dict:
        value = _parser(args[1])

        def parse_dict(data):
            if type(data) is not dict:
                raise RecordError("", f"expected an object, got {type(data).__name__}")
            out = {}
            same = _strings.setdefault
            for k, v in data.items():
                try:
                    out[same(k, k)] = value(v)
                except RecordError as e:
                    raise _within(e, k) from None
            return out
        return parse_dict
    if origin is list:
        item = _parser(args[0])
        if args[0] is str:
            def parse_str_list(data):
                if type(data) is not list:
                    raise RecordError("", f"expected a list, got {type(data).__name__}")
                same = _strings.setdefault
                for i, v in enumerate(data):
                    if type(v) is not str:
                        raise RecordError(f"[{i}]", f"expected a string, got {_brief(v)}")
                return [same(v, v) for v in data]
            return parse_str_list

        def parse_list(data):
            if type(data) is not list:
                raise RecordError("", f"expected a list, got {type(data).__name__}")
            try:
                return [item(v) for v in data]
            except RecordError as e:
                for i, v in enumerate(data):        # the index of the item at fault, found again
                    try:
                        item(v)
                    except RecordError:
                        raise _within(e, f"[{i}]") from None
                raise
        return parse_list
    return _scalar(tp)


#: one parser per type hint, built once (walking the type hints per record cost most of a read)
_PARSERS: dict[Any, Callable[[Any], Any]] = {}


def _parser(tp: Any) -> Callable[[Any], Any]:
    p = _PARSERS.get(tp)
    if p is None:
        p = _PARSERS[tp] = _build(tp)
    return p


def from_json(tp: Any, data: Any, where: str = "") -> Any:
    """``data`` (decoded JSON) as an instance of the type hint ``tp``; raises RecordError naming
    the field that is wrong (``where`` in front of it)."""
    try:
        return _parser(tp)(data)
    except RecordError as e:
        if where:
            raise _within(e, where) from None
        raise
