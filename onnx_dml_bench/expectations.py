"""Expectations files: the known failures of an EP, listed with a reason and a link, so that CI
fails on what is new, not on what is known (as WebGPU CTS / web-platform-tests expectations or ONNX
Runtime's test exclusion lists do).

    version: 1
    ep: DmlExecutionProvider          # optional: entries apply only to records of this EP
    expectations:
      - cases: "mp2-i8-*"             # a case id or an fnmatch glob, or a list of them
        verdict: FAIL                  # or a list of verdicts
        reason: "int8 ties ..."        # optional
        link: https://...              # optional

Matching: a record takes the entry that lists its case id exactly; failing that, the first entry
(in file order) with a glob that matches it. Classification of the records of a run, for a set of
``fail_on`` verdicts:

- expected:   an entry matches and lists the record's verdict;
- unexpected: the verdict is in fail_on and no entry expects it (no entry matches, or the entry
              lists other verdicts): a new failure;
- fixed:      the entry expects a fail_on verdict but the case now PASSes: remove it from the file;
- changed:    an entry matches, the verdict is another one, neither PASS nor in fail_on
              (e.g. FAIL -> NOT_OFFLOADED): reported, not a failure;
- stale:      entries that matched no record (the case is gone, or was not run here: another op,
              shard or EP): reported, not a failure.

Exit-code policy (:data:`EXIT_POLICY`): 1 when anything is unexpected or fixed, else 0. A fixed
case fails the run so that the file keeps up with the EP: an entry left in place would hide a
later regression of that case behind "expected".

Records are objects with attributes ``case_id, ep, op, dtype, verdict, attribution, reason``, or
mappings with these keys (a results JSONL line).
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import one_line
from .outdir import write_text
from .record import VERDICTS, Verdict
from .safeload import MAX_MESSAGE, UntrustedFileError, brief, load_file

#: the largest expectations file read (an entry per known failure: thousands of lines at most)
MAX_FILE_BYTES = 16 << 20

VERSION = 1
EXIT_POLICY = "exit code 1 when a case is unexpected (a new failure) or fixed (remove its entry); stale entries do not fail"
_TOP_KEYS = {"version", "ep", "expectations"}
_ENTRY_KEYS = {"cases", "verdict", "reason", "link"}
_GLOB_CHARS = set("*?[")
REASON_MAX = 200


class ExpectationsError(ValueError):
    """A malformed expectations file; the message is one line naming file, entry and field."""


def _get(rec, key: str):
    if isinstance(rec, Mapping):
        return rec.get(key)
    return getattr(rec, key, None)


def _is_glob(pattern: str) -> bool:
    return bool(_GLOB_CHARS & set(pattern))


@dataclass(frozen=True)
class Entry:
    index: int                       # position in the file's `expectations` list (0-based)
    cases: tuple[str, ...]
    verdicts: frozenset[str]
    reason: str = ""
    link: str = ""

    def matches(self, case_id: str) -> bool:
        return any(p == case_id or (_is_glob(p) and fnmatch.fnmatchcase(case_id, p)) for p in self.cases)

    def describe(self) -> str:
        pats = ", ".join(self.cases) if len(self.cases) <= 3 else f"{self.cases[0]}, ... ({len(self.cases)} cases)"
        return f"expectations[{self.index}] ({pats}; expects {'/'.join(sorted(self.verdicts))})"


@dataclass
class Match:
    """One record and the entry that matched it (None when none did)."""
    record: object
    entry: Entry | None

    @property
    def case_id(self) -> str:
        return _get(self.record, "case_id")

    @property
    def verdict(self) -> str:
        return _get(self.record, "verdict")


@dataclass
class Classification:
    fail_on: tuple[str, ...]
    expected: list[Match] = field(default_factory=list)
    unexpected: list[Match] = field(default_factory=list)
    fixed: list[Match] = field(default_factory=list)
    changed: list[Match] = field(default_factory=list)
    stale: list[Entry] = field(default_factory=list)
    passing: int = 0                 # records with no entry and a verdict outside fail_on
    out_of_scope: int = 0            # records of another EP than the file's `ep`

    @property
    def exit_code(self) -> int:
        """See :data:`EXIT_POLICY`."""
        return 1 if self.unexpected or self.fixed else 0

    def summary_lines(self, limit: int = 50) -> list[str]:
        lines = [f"expectations: {len(self.expected)} expected, {len(self.unexpected)} unexpected, "
                 f"{len(self.fixed)} fixed, {len(self.changed)} changed, {len(self.stale)} stale entries "
                 f"(fail-on {','.join(self.fail_on)})"]

        def some(items, fmt):
            out = [fmt(x) for x in items[:limit]]
            if len(items) > limit:
                out.append(f"  ... and {len(items) - limit} more")
            return out

        if self.unexpected:
            lines.append("unexpected (new failures):")
            lines += some(self.unexpected, lambda m: f"  {m.case_id}: {m.verdict}"
                          + (f" (expected {'/'.join(sorted(m.entry.verdicts))}, expectations[{m.entry.index}])" if m.entry else ""))
        if self.fixed:
            lines.append("fixed, remove from expectations:")
            lines += some(self.fixed, lambda m: f"  {m.case_id}: PASS (expectations[{m.entry.index}] expects "
                                                f"{'/'.join(sorted(m.entry.verdicts))})")
        if self.changed:
            lines.append("changed (not a failure):")
            lines += some(self.changed, lambda m: f"  {m.case_id}: {m.verdict} (expectations[{m.entry.index}] expects "
                                                  f"{'/'.join(sorted(m.entry.verdicts))})")
        if self.stale:
            lines.append("stale entries (matched no case of this run):")
            lines += some(self.stale, lambda e: f"  {e.describe()}")
        lines.append(f"policy: {EXIT_POLICY} -> exit code {self.exit_code}")
        return lines


@dataclass
class Expectations:
    entries: list[Entry]
    ep: str | None = None
    path: Path | None = None
    version: int = VERSION

    def applies_to(self, record) -> bool:
        return self.ep is None or _get(record, "ep") == self.ep

    def entry_for(self, case_id: str) -> Entry | None:
        """The entry listing ``case_id`` exactly, else the first whose glob matches it."""
        for e in self.entries:
            if case_id in e.cases:
                return e
        for e in self.entries:
            if e.matches(case_id):
                return e
        return None

    def classify(self, records: Iterable, fail_on: Iterable[str] = Verdict.FAIL_ON) -> Classification:
        fail_on = tuple(fail_on)
        unknown = set(fail_on) - set(VERDICTS)
        if unknown:
            raise ValueError(f"fail_on: unknown verdict(s) {', '.join(sorted(unknown))}")
        out = Classification(fail_on=fail_on)
        used: set[int] = set()
        for rec in records:
            if not self.applies_to(rec):
                out.out_of_scope += 1
                continue
            entry = self.entry_for(_get(rec, "case_id"))
            verdict = _get(rec, "verdict")
            m = Match(rec, entry)
            if entry is None:
                if verdict in fail_on:
                    out.unexpected.append(m)
                else:
                    out.passing += 1
                continue
            used.add(entry.index)
            if verdict in entry.verdicts:
                out.expected.append(m)
            elif verdict == "PASS" and entry.verdicts & set(fail_on):
                out.fixed.append(m)
            elif verdict in fail_on:
                out.unexpected.append(m)
            else:
                out.changed.append(m)
        out.stale = [e for e in self.entries if e.index not in used]
        return out


# ----------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------

def _str_list(value, where: str, what: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ExpectationsError(f"{where}: must be {what} or a non-empty list of them, got {brief(value)}")
    for i, v in enumerate(items):
        if not isinstance(v, str) or not v.strip():
            raise ExpectationsError(f"{where}[{i}]: must be a non-empty string, got {brief(v)}")
    return tuple(v.strip() for v in items)


def parse(data, source: str = "<expectations>") -> Expectations:
    """Expectations from already-parsed YAML/JSON data; errors name ``source``, entry and field."""
    if not isinstance(data, Mapping):
        raise ExpectationsError(f"{source}: must be a mapping with keys version, expectations (and ep), "
                                f"got {type(data).__name__}")
    extra = set(data) - _TOP_KEYS
    if extra:
        raise ExpectationsError(f"{source}: unknown key(s) {', '.join(sorted(map(str, extra)))}; "
                                f"known: {', '.join(sorted(_TOP_KEYS))}")
    version = data.get("version")
    if version != VERSION:
        raise ExpectationsError(f"{source}: version: must be {VERSION}, got {brief(version)}")
    ep = data.get("ep")
    if ep is not None and (not isinstance(ep, str) or not ep.strip()):
        raise ExpectationsError(f"{source}: ep: must be an EP name such as DmlExecutionProvider, got {brief(ep)}")
    raw = data.get("expectations")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ExpectationsError(f"{source}: expectations: must be a list, got {type(raw).__name__}")
    entries, exact_seen = [], {}
    for i, item in enumerate(raw):
        where = f"{source}: expectations[{i}]"
        if not isinstance(item, Mapping):
            raise ExpectationsError(f"{where}: must be a mapping with cases and verdict, got {brief(item)}")
        extra = set(item) - _ENTRY_KEYS
        if extra:
            raise ExpectationsError(f"{where}.{sorted(map(str, extra))[0]}: unknown field; "
                                    f"known: {', '.join(sorted(_ENTRY_KEYS))}")
        for req in ("cases", "verdict"):
            if req not in item:
                raise ExpectationsError(f"{where}.{req}: missing")
        cases = _str_list(item["cases"], f"{where}.cases", "a case id or glob")
        for c in cases:
            if not _is_glob(c):
                if c in exact_seen:
                    raise ExpectationsError(f"{where}.cases: {brief(c)} is already listed in expectations[{exact_seen[c]}]")
                exact_seen[c] = i
        verdicts = _str_list(item["verdict"], f"{where}.verdict", "a verdict")
        bad = [v for v in verdicts if v not in VERDICTS]
        if bad:
            raise ExpectationsError(f"{where}.verdict: unknown verdict {brief(bad[0])}; known: {', '.join(VERDICTS)}")
        texts = {}
        for key in ("reason", "link"):
            v = item.get(key, "")
            if v is None:
                v = ""
            if not isinstance(v, str):
                raise ExpectationsError(f"{where}.{key}: must be a string, got {brief(v)}")
            texts[key] = v.strip()
        entries.append(Entry(i, cases, frozenset(verdicts), texts["reason"], texts["link"]))
    return Expectations(entries, ep.strip() if ep else None, None, version)


def load(path) -> Expectations:
    """Read an expectations file (YAML; JSON is YAML too), within the bounds of :mod:`safeload`
    (size, nesting depth, YAML aliases counted as what they expand to); every error is one line."""
    path = Path(path)
    try:
        data = load_file(path, what="expectations file", yaml_ok=True, limit=MAX_FILE_BYTES)
    except UntrustedFileError as e:
        raise ExpectationsError(str(e)) from None
    try:
        exp = parse(data, str(path))
    except ExpectationsError as e:
        raise ExpectationsError(one_line(e, MAX_MESSAGE)) from None
    except (TypeError, ValueError, AttributeError, RecursionError) as e:
        raise ExpectationsError(one_line(f"{path}: not an expectations file ({type(e).__name__}: {e})",
                                         MAX_MESSAGE)) from None
    exp.path = path
    return exp


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------

def _q(s: str) -> str:
    """A YAML scalar for ``s`` on one line (quoted where YAML would read it otherwise)."""
    return yaml.safe_dump(s, default_style=None, width=1 << 20).strip().removesuffix("\n...").strip()


def write(records: Iterable, path, fail_on: Iterable[str] = Verdict.FAIL_ON,
          reason: str = "known failure; see the run's report", link: str = "", ep: str | None = None) -> int:
    """Write an expectations file that lists every record whose verdict is in ``fail_on``, by exact
    case id: one entry per case, grouped by operator, data type and verdict under comment headers,
    sorted; each entry's ``reason`` is the record's attribution and own reason (shortened to one
    line), or ``reason`` when the record has none. The file's ``ep`` is the records' EP: records
    of several EPs need ``ep`` to pick one (an expectations file is per EP).
    Returns the number of entries written."""
    fail_on = tuple(fail_on)
    unknown = set(fail_on) - set(VERDICTS)
    if unknown:
        raise ValueError(f"fail_on: unknown verdict(s) {', '.join(sorted(unknown))}")
    records = [r for r in records if ep is None or _get(r, "ep") == ep]
    eps = sorted({str(_get(r, "ep") or "") for r in records})
    if len(eps) > 1:
        raise ValueError(f"records of several EPs ({', '.join(eps)}): pass ep= to write one file per EP")
    picked = [r for r in records if _get(r, "verdict") in fail_on]
    key = lambda r: (str(_get(r, "ep") or ""), str(_get(r, "op") or ""), str(_get(r, "dtype") or ""),
                     str(_get(r, "verdict")), str(_get(r, "case_id")))
    picked.sort(key=key)
    lines = [
        "# Known failures: cases whose verdict is expected (onnx_dml_bench.expectations).",
        f"# Written from {len(picked)} record(s) with a verdict in {','.join(fail_on)}.",
        f"# Policy: {EXIT_POLICY}.",
        f"version: {VERSION}",
    ]
    if eps and eps[0]:
        lines.append(f"ep: {_q(eps[0])}")
    lines.append("expectations:" if picked else "expectations: []")
    group = None
    seen = set()
    for r in picked:
        cid = str(_get(r, "case_id"))
        if cid in seen:          # one entry per case id (a resumed run may repeat a case)
            continue
        seen.add(cid)
        g = key(r)[:4]
        if g != group:
            group = g
            header = " / ".join(x for x in g[1:] if x)
            lines += ["", f"  # --- {header} ---"]
        att = _get(r, "attribution")
        why = one_line(_get(r, "reason") or reason, REASON_MAX)
        if att:
            why = one_line(f"{att}: {why}", REASON_MAX)
        lines.append(f"  - cases: {_q(cid)}")
        lines.append(f"    verdict: {_get(r, 'verdict')}")
        lines.append(f"    reason: {_q(why)}")
        if link:
            lines.append(f"    link: {_q(link)}")
    text = "\n".join(lines) + "\n"
    parse(yaml.safe_load(text), str(path))          # what is written must read back
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)
    return len(seen)
