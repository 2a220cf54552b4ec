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

An entry's ``verdict`` may name findings too (``BATCH_DEPENDENT``: a PASS with that finding), and
``FLAKY`` marks the case flaky, as Mesa's deqp-runner flake lists and the WebGPU CTS expectations
do: the entry then expects PASS, FAIL and FLAKY (besides what else it lists), and never reports
the case fixed.

Matching: a record takes the entry that lists its case id exactly; failing that, the first entry
(in file order) with a glob that matches it. Classification of the records of a run, for a set of
``fail_on`` verdicts and findings (a record fails by its verdict, or by a finding, for a PASS):

- expected:   an entry matches and lists the record's verdict (or, for a PASS that fails by a
              finding, that finding), or marks the case flaky and the verdict is PASS, FAIL or FLAKY;
- unexpected: the record fails and no entry expects it (no entry matches, or the entry lists
              other verdicts): a new failure;
- fixed:      the entry expects a fail_on verdict or finding but the case now PASSes (without a
              fail_on finding), unless the entry marks it flaky: remove it from the file;
- changed:    an entry matches, the verdict is another one, neither PASS nor in fail_on
              (e.g. FAIL -> NOT_OFFLOADED): reported, not a failure;
- stale:      entries that matched no record though they concern an operator of the run (the
              case is gone, or was not run here: another profile, shard or EP): reported, not a
              failure. An entry whose case ids name only operators the run did not touch (the
              prefix of a case id, ``mp2-``) is out of its scope (``unscoped``), not stale: a
              one-operator run is not told of every other operator's entries.

A file with an ``ep`` covers that EP's records alone: a failing record of another EP is unexpected
(a file written for one EP never turns a gate of another green); its passing records are counted
as out of scope.

Exit-code policy (:data:`EXIT_POLICY`): 1 when anything is unexpected or fixed, else 0. A fixed
case fails the run so that the file keeps up with the EP: an entry left in place would hide a
later regression of that case behind "expected".

Records are objects with attributes ``case_id, ep, op, dtype, verdict, attribution, reason``, or
mappings with these keys (a results JSONL line).
"""
from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import one_line
from .outdir import write_text
from .record import FAIL_ON_DEFAULT, FINDINGS, VERDICTS
from .safeload import MAX_MESSAGE, UntrustedFileError, brief, load_file

#: the largest expectations file read (an entry per known failure: thousands of lines at most)
MAX_FILE_BYTES = 16 << 20

VERSION = 1
EXIT_POLICY = "exit code 1 when a case is unexpected (a new failure) or fixed (remove its entry); stale entries do not fail"
_TOP_KEYS = {"version", "ep", "expectations"}
_ENTRY_KEYS = {"cases", "verdict", "reason", "link"}
_GLOB_CHARS = set("*?[")
REASON_MAX = 200
#: what an entry that marks its cases flaky expects
FLAKY_EXPECTS = ("PASS", "FAIL", "FLAKY")


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

    @property
    def flaky(self) -> bool:
        """The entry marks its cases flaky: PASS, FAIL and FLAKY are all expected, never fixed."""
        return "FLAKY" in self.verdicts

    def expects(self, verdict: str, gate: str | None = None) -> bool:
        """Whether a record of ``verdict`` (failing by ``gate``: its verdict or finding in fail_on)
        is expected by this entry."""
        if verdict in self.verdicts or (gate is not None and gate in self.verdicts):
            return True
        return self.flaky and verdict in FLAKY_EXPECTS

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
    unscoped: list[Entry] = field(default_factory=list)   # entries of operators the run did not touch
    passing: int = 0                 # records with no entry and a verdict outside fail_on
    ep: str | None = None            # the file's `ep`
    out_of_scope: int = 0            # records of another EP than the file's `ep`
    other_eps: tuple[str, ...] = ()  # those EPs

    @property
    def exit_code(self) -> int:
        """See :data:`EXIT_POLICY`."""
        return 1 if self.unexpected or self.fixed else 0

    def summary_lines(self, limit: int = 50) -> list[str]:
        lines = [f"expectations: {len(self.expected)} expected, {len(self.unexpected)} unexpected, "
                 f"{len(self.fixed)} fixed, {len(self.changed)} changed, {len(self.stale)} stale entries "
                 f"(fail-on {','.join(self.fail_on)})"]
        if self.other_eps:
            lines.append(f"{self.out_of_scope} records of {', '.join(self.other_eps)}, which the file (ep: {self.ep}) "
                         f"does not cover: their failures are unexpected")

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
        if self.unscoped:
            lines.append(f"({len(self.unscoped)} entries concern operators this run did not run: not checked)")
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

    def classify(self, records: Iterable, fail_on: Iterable[str] = FAIL_ON_DEFAULT) -> Classification:
        fail_on = tuple(fail_on)
        unknown = set(fail_on) - set(VERDICTS) - set(FINDINGS)
        if unknown:
            raise ValueError(f"fail_on: unknown verdict(s) or finding(s) {', '.join(sorted(unknown))}")
        out = Classification(fail_on=fail_on)
        used: set[int] = set()
        others: set[str] = set()
        for rec in records:
            if not self.applies_to(rec):
                out.out_of_scope += 1
                others.add(str(_get(rec, "ep")))
                if failing_by(rec, fail_on) is not None:
                    out.unexpected.append(Match(rec, None))     # the file does not cover its EP
                continue
            entry = self.entry_for(_get(rec, "case_id"))
            verdict = _get(rec, "verdict")
            gate = failing_by(rec, fail_on)
            m = Match(rec, entry)
            if entry is None:
                if gate is not None:
                    out.unexpected.append(m)
                else:
                    out.passing += 1
                continue
            used.add(entry.index)
            if entry.expects(verdict, gate):
                out.expected.append(m)
            elif verdict == "PASS" and gate is None and entry.verdicts & set(fail_on):
                out.fixed.append(m)
            elif gate is not None:
                out.unexpected.append(m)
            else:
                out.changed.append(m)
        ran = {str(_get(rec, "case_id") or "").split("-", 1)[0] for rec in records if self.applies_to(rec)}
        for e in self.entries:
            if e.index not in used:
                (out.stale if in_scope(e, ran) else out.unscoped).append(e)
        out.other_eps = tuple(sorted(others))
        out.ep = self.ep
        return out


def in_scope(entry: Entry, prefixes: set[str]) -> bool:
    """Whether ``entry`` concerns a run whose case ids begin with one of ``prefixes`` (the
    operators' ``short``: ``mp2``): one of its patterns names such a case, or a glob that may."""
    for p in entry.cases:
        head = p.split("-", 1)[0]
        if head in prefixes or _is_glob(head):
            return True
    return False


def findings_of(rec) -> tuple[str, ...]:
    """The findings of a record (``CaseRecord.findings``, or of a results line: its ``finding``
    and the findings its labels name)."""
    if hasattr(rec, "findings"):
        return tuple(rec.findings)
    labels = _get(rec, "labels") or []
    found = {lab[8:] for lab in labels if isinstance(lab, str) and lab.startswith("finding:")}
    if _get(rec, "finding"):
        found.add(_get(rec, "finding"))
    return tuple(f for f in FINDINGS if f in found)


def failing_by(rec, fail_on) -> str | None:
    """What of ``fail_on`` the record fails by: its verdict, else its first finding listed; None
    when it does not fail."""
    verdict = _get(rec, "verdict")
    if verdict in fail_on:
        return verdict
    return next((f for f in findings_of(rec) if f in fail_on), None)


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
        bad = [v for v in verdicts if v not in VERDICTS and v not in FINDINGS]
        if bad:
            raise ExpectationsError(f"{where}.verdict: unknown verdict {brief(bad[0])}; known: "
                                    f"{', '.join(VERDICTS + FINDINGS)}")
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


def write(records: Iterable, path, fail_on: Iterable[str] = FAIL_ON_DEFAULT,
          reason: str = "known failure; see the run's report", link: str = "", ep: str | None = None,
          reason_of: Callable[[object], str] | None = None, header: Iterable[str] = ()) -> int:
    """Write an expectations file that lists every record whose verdict (or a finding) is in ``fail_on``, by exact
    case id, grouped by operator, data type and verdict under comment headers, sorted. Without
    ``reason_of`` each case is one entry whose ``reason`` is the record's attribution and own reason
    (shortened to one line), or ``reason`` when the record has none. With ``reason_of`` (record ->
    why it is expected, e.g. the text of the known deviation that explains it) the cases of one
    group that share a reason are one entry listing them, with that reason whole. The file's ``ep``
    is the records' EP: records of several EPs need ``ep`` to pick one (an expectations file is per
    EP). ``header``: comment lines put at the top. Returns the number of cases listed."""
    fail_on = set(fail_on)
    unknown = fail_on - set(VERDICTS) - set(FINDINGS)
    if unknown:
        raise ValueError(f"fail_on: unknown verdict(s) or finding(s) {', '.join(sorted(unknown))}")
    records = [r for r in records if ep is None or _get(r, "ep") == ep]
    fail_on = tuple(v for v in (*VERDICTS, *FINDINGS) if v in fail_on)      # in report order: the file is the same run to run
    eps = sorted({str(_get(r, "ep") or "") for r in records})
    if len(eps) > 1:
        raise ValueError(f"records of several EPs ({', '.join(eps)}): pass ep= to write one file per EP")
    picked = [r for r in records if failing_by(r, fail_on) is not None]
    key = lambda r: (str(_get(r, "ep") or ""), str(_get(r, "op") or ""), str(_get(r, "dtype") or ""),
                     str(failing_by(r, fail_on)), str(_get(r, "case_id")))
    picked.sort(key=key)
    lines = [
        "# Known failures: cases whose verdict is expected (onnx_dml_bench.expectations).",
        *[f"# {h}" for h in header],
        f"# Written from {len(picked)} record(s) with a verdict in {','.join(fail_on)}.",
        f"# Policy: {EXIT_POLICY}.",
        f"version: {VERSION}",
    ]
    if eps and eps[0]:
        lines.append(f"ep: {_q(eps[0])}")
    entries: list[tuple[tuple, list[str], str, str]] = []      # (group, case ids, verdict, reason)
    seen = set()
    for r in picked:
        cid = str(_get(r, "case_id"))
        if cid in seen:          # one entry per case id (a resumed run, or two runs of one case)
            continue
        seen.add(cid)
        g = key(r)[:4]
        if reason_of is not None:
            why = " ".join(str(reason_of(r) or reason).split())
            same = next((e for e in entries if e[0] == g and e[3] == why), None)
            if same is not None:
                same[1].append(cid)
                continue
        else:
            att = _get(r, "attribution")
            why = one_line(_get(r, "reason") or reason, REASON_MAX)
            if att:
                why = one_line(f"{att}: {why}", REASON_MAX)
        entries.append((g, [cid], str(failing_by(r, fail_on)), why))
    lines.append("expectations:" if entries else "expectations: []")
    group = None
    for g, cids, verdict, why in entries:
        if g != group:
            group = g
            lines += ["", f"  # --- {' / '.join(x for x in g[1:] if x)} ---"]
        if len(cids) == 1:
            lines.append(f"  - cases: {_q(cids[0])}")
        else:
            lines.append("  - cases:")
            lines += [f"      - {_q(c)}" for c in cids]
        lines.append(f"    verdict: {verdict}")
        lines.append(f"    reason: {_q(why)}")
        if link:
            lines.append(f"    link: {_q(link)}")
    text = "\n".join(lines) + "\n"
    parse(yaml.safe_load(text), str(path))          # what is written must read back
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)
    return len(seen)
