"""The main job (``onnx-dml-bench bench``, ``scripts/bench.sh``): its policy, under the thin
command of ``cli/bench.py``.

1. The lanes this machine can run (the CPU EP, the DML EP, the direct DirectML lane, any other EP
   found), each run in its own ``run`` process into ``OUT/<lane>/`` (its output in
   ``OUT/<lane>.log`` unless the per-operator tables are asked for).
2. The previous run's merged results, reports, shrunk cases and bundles move to ``OUT/previous/``
   first (one run kept), so that the job says what changed since.
3. The lanes merged into ``OUT/results.jsonl``; every failure grouped into bugs (party at fault and
   failure signature, :mod:`report.bugs`); within a time budget, one case per bug of DirectML or
   of the DML EP shrunk and bundled beside the merged results (``shrunk/``, ``bundle/``).
4. Each lane checked against the expectations shipped for it (``expectations/``): their status and
   the upstream links of their entries, the shrinking done and what changed since the previous run
   go into ``OUT/bench.json``, which the reports (report.html, summary.json) read.
5. A short account (a line per lane, the bugs, what changed) and one exit line: 0 every result as
   expected, 1 unexpected results (new failures, or fixed cases whose entry should go; a crash or a
   hang on a lane without expectations), 3 a lane that could not run (its canary failed, or its EP
   computed none of its cases: a lane of refusals alone tests nothing).
"""
from __future__ import annotations

import datetime as _dt
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import expectations as X
from .outdir import (BENCH_JSON, BUNDLE_DIR, JUNIT_XML, PREVIOUS_DIR, REPORT_HTML, RESULTS, SHRUNK_DIR, SUMMARY_JSON,
                     TRIAGE_JSON, TRIAGE_MD, write_text)
from .record import Verdict
from .report import bugs as BG
from .report.data import load
from .report.diff import env_differences
from .lanes.catalog import ep_rows, set_up_by, shipped
from .results import merge, read
from .triage.triage import shrink_picks

#: verdicts that fail a lane without shipped expectations
LOST = ("CRASH", "TIMEOUT")
#: the main job's time for shrinking and bundling, by default (seconds; 0: none)
SHRINK_BUDGET_S = 60.0
#: what moves to OUT/previous/ before a run (the merged run, its reports and hand-over files)
KEPT = (RESULTS, SUMMARY_JSON, REPORT_HTML, JUNIT_XML, BENCH_JSON, TRIAGE_MD, TRIAGE_JSON, SHRUNK_DIR, BUNDLE_DIR)
#: what the shrinking did, beside the merged results
SHRINK_LOG = "shrink.log"
#: bugs listed on the terminal
BUG_LINES = 12

Say = Callable[[str], None]


@dataclass
class LaneRun:
    key: str
    ep: str = ""
    detail: str = ""
    code: int | None = None
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)
    expectations: str = ""           # the file checked, or why none
    unexpected: list = field(default_factory=list)
    fixed: list = field(default_factory=list)
    expected: int = 0
    changed: int = 0                 # expected to fail, now another verdict that is no failure (refused)
    stale: int = 0
    unscoped: int = 0
    checked: bool = False            # a shipped expectations file applied
    log: str = ""                    # where its output went ('' : the terminal)

    def status(self) -> dict:
        return {"lane": self.key, "file": self.expectations if self.checked else None, "expected": self.expected,
                "unexpected": len(self.unexpected), "fixed": len(self.fixed), "stale": self.stale,
                "unscoped": self.unscoped, "changed": self.changed, "note": None if self.checked else self.expectations or None,
                "unexpected_cases": self.unexpected[:50], "fixed_cases": self.fixed[:50]}


# ----------------------------------------------------------------------------------------------
# The lanes
# ----------------------------------------------------------------------------------------------

def plan_lanes() -> tuple[list[LaneRun], dict[str, str]]:
    """The lanes to run (ok here) and, for every other EP the bench knows, why it cannot run."""
    rows = ep_rows()
    ok = {r["key"]: r for r in rows if r["status"] == "ok"}
    # the lanes with shipped expectations first, in the catalog's order; the other EPs found after them
    first = [r["key"] for r in rows if r["key"] in ok and shipped(r["key"]) is not None]
    keys = first + sorted(k for k in ok if k not in first and not k.startswith("plugin"))
    lanes = [LaneRun(k, ok[k]["ep"], " ".join(x for x in (str(ok[k].get("package") or ""),) if x) or ok[k]["ep"])
             for k in keys]
    missing = {r["key"]: r["status"].removeprefix("unavailable: ")
               for r in rows if r["status"] != "ok" and not r["key"].startswith("plugin")}
    return lanes, missing


def run_lane(ln: LaneRun, profile: str, jobs: int, out: Path, say: Say, tables: bool = False) -> None:
    """One lane's ``run`` in its own process into ``OUT/<lane>/``. Its output goes to
    ``OUT/<lane>.log`` (``tables``: to the terminal too, but its own exit line); its verdict counts
    into ``ln``."""
    cmd = [sys.executable, "-m", "onnx_dml_bench", "run", "--ep", ln.key, "--profile", profile, "--jobs", str(jobs),
           "--out", str(out / ln.key), "--overwrite", "--no-report", "--fail-on", ",".join(LOST)]
    log = out / f"{ln.key}.log"
    ln.log = str(log)
    say(f"bench: == {ln.key}: {ln.ep}, the {profile} profile, {jobs} worker{'s' if jobs != 1 else ''} (its output: {log})")
    t = time.monotonic()
    with open(log, "w", encoding="utf-8", errors="replace") as f:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        tail: list[str] = []
        for line in p.stdout:
            f.write(line)
            f.flush()
            tail = (tail + [line.rstrip("\n")])[-5:]
            if tables and not line.startswith("exit code"):
                say(line.rstrip("\n"))
        ln.code = p.wait()
    ln.seconds = time.monotonic() - t
    if ln.code not in (0, 1) and not tables:
        for line in tail:
            say(f"  {ln.key}: {line}")
    res = out / ln.key / RESULTS
    if res.is_file():
        try:
            ln.counts = Counter(r.verdict for r in read(res, allow_partial=True).records)
        except Exception as e:  # noqa: BLE001 - an unreadable file is the lane's outcome, said below
            say(f"bench: {ln.key}: its results cannot be read: {e}")


def merge_lanes(lanes: list[LaneRun], out: Path) -> Path | None:
    """The lanes' results as one file ``OUT/results.jsonl`` (None: no lane gave results)."""
    results = [out / ln.key / RESULTS for ln in lanes if (out / ln.key / RESULTS).is_file()]
    if not results:
        return None
    merged = out / RESULTS
    merged.unlink(missing_ok=True)
    merge(results, merged)
    return merged


def check(ln: LaneRun, out: Path, exp_dir: Path) -> dict[str, str]:
    """The lane's results against its shipped expectations (where one applies to its device);
    returns the upstream links of the entries that matched a record (case id -> link)."""
    res = out / ln.key / RESULTS
    if not res.is_file():
        return {}
    got = read(res, allow_partial=True)
    recs = got.records
    ship = shipped(ln.key)
    path = exp_dir / ship.file if ship is not None else None
    device = " ".join(str(e.device) for e in got.envs).lower()
    if path is None or not path.is_file() or not ship.applies(got.envs, device):
        ln.expectations = ("no expectations shipped for this lane" if path is None or not path.is_file()
                           else f"{path} is for {ship.what}, not this one") + ": only CRASH and TIMEOUT count"
        ln.unexpected = [f"{r.case_id} {r.verdict}" for r in recs if r.verdict in LOST]
        return {}
    cls = X.load(path).classify(recs, Verdict.FAIL_ON)
    ln.expectations, ln.checked = str(path), True
    ln.unexpected = [f"{m.case_id} {m.verdict}" for m in cls.unexpected]
    ln.fixed = [m.case_id for m in cls.fixed]
    ln.expected = len(cls.expected)
    ln.stale, ln.unscoped, ln.changed = len(cls.stale), len(cls.unscoped), len(cls.changed)
    return {m.case_id: m.entry.link for m in cls.expected + cls.unexpected + cls.fixed + cls.changed
            if m.entry is not None and m.entry.link}


# ----------------------------------------------------------------------------------------------
# The previous run, and what changed since
# ----------------------------------------------------------------------------------------------

def keep_previous(out: Path) -> Path | None:
    """Move the merged run of ``out`` (results, reports, bench.json, shrunk cases, bundles) into
    ``out/previous/``, replacing the one kept there; None when ``out`` holds no merged run (the
    run kept before, if any, stays)."""
    out = Path(out)
    if not (out / RESULTS).is_file():
        return None
    prev = out / PREVIOUS_DIR
    if prev.is_symlink() or prev.is_file():
        prev.unlink()
    elif prev.exists():
        shutil.rmtree(prev)
    prev.mkdir(parents=True)
    for name in KEPT:
        p = out / name
        if p.is_symlink():
            p.unlink()
        elif p.exists():
            shutil.move(str(p), str(prev / name))
    return prev


def _bug_cases(bugs: list[BG.Bug]) -> set[tuple[str, str]]:
    return {(c, b.ep) for b in bugs for c in b.cases}


def what_changed(prev: Path | None, res, bugs: list[BG.Bug]) -> dict | None:
    """What changed since the previous run kept in ``prev``: new and fixed bugs (by party, lane and
    signature), new and fixed failing cases (a case in a bug now and in none before, on a lane both
    runs ran; the reverse), bugs of lanes or operators not run this time, and the environments'
    differences per lane. None without a previous run."""
    if prev is None or not (prev / RESULTS).is_file():
        return None
    try:
        before = load([prev / RESULTS])
    except Exception as e:  # noqa: BLE001 - a previous run that cannot be read is said, not fatal
        return {"folder": PREVIOUS_DIR, "error": f"the previous run cannot be read: {e}"}
    old = BG.group(before.records, envs=before.envs)
    verdict_now = {(r.case_id, r.ep): r.verdict for r in res.records}
    was_run = {(r.case_id, r.ep) for r in before.records}
    now_keys = {b.key: b for b in bugs}
    old_keys = {b.key: b for b in old}
    fixed, gone, changed = [], [], []
    for k, b in old_keys.items():
        if k in now_keys:
            continue
        now = [verdict_now.get((c, b.ep)) for c in b.cases]
        if all(v is None for v in now):
            gone.append(k)                  # its lane or its cases not run this time
        elif all(v in (None, Verdict.PASS) for v in now):
            fixed.append(k)                 # every case of it that ran passes now
        else:
            changed.append(k)               # no longer this bug, but not a pass either (refused, another failure)
    now_cases, old_cases = _bug_cases(bugs), _bug_cases(old)
    env_changes = []
    for ep in sorted({e.ep for e in res.envs} & {e.ep for e in before.envs}):
        for key, b, a in env_differences([e for e in before.envs if e.ep == ep], [e for e in res.envs if e.ep == ep]):
            if key.startswith(("started", "host", "hostname", "pid", "argv", "command", "elapsed", "seconds")) \
                    or "canary" in key:        # the canary's text says how long it took
                continue
            env_changes.append({"lane": ep, "key": key, "before": b[:200], "after": a[:200]})
    env_changes.sort(key=lambda e: "revision" in e["key"])     # the stack's changes first, the bench's own last
    generated = ""
    if before.envs:
        generated = str(getattr(before.envs[0], "started", "") or "")
    return {
        "folder": PREVIOUS_DIR, "generated": generated,
        "cases_before": len(before.records), "cases_now": len(res.records),
        "new_bugs": sorted(k for k in now_keys if k not in old_keys),
        "fixed_bugs": sorted(fixed),
        "changed_bugs": sorted(changed),
        "not_rerun_bugs": sorted(gone),
        "new_cases": sorted({c for c, ep in now_cases - old_cases}),
        "fixed_cases": sorted({c for c, ep in old_cases - now_cases if verdict_now.get((c, ep)) == Verdict.PASS}),
        "changed_cases": sorted({c for c, ep in old_cases - now_cases
                                 if verdict_now.get((c, ep)) not in (None, Verdict.PASS)}),
        "new_cases_not_run_before": sorted({c for c, ep in now_cases - old_cases if (c, ep) not in was_run}),
        "environment": env_changes[:40],
    }


def changed_line(prev: dict | None) -> str:
    """What changed since the previous run, in one line."""
    if prev is None:
        return "since the previous run: none kept in this folder (the next run will say what changed)"
    if prev.get("error"):
        return f"since the previous run: {prev['error']}"

    def n(key: str, one: str) -> str:
        k = len(prev.get(key) or [])
        return f"{k} {one}{'s' if k != 1 else ''}"
    envs = prev.get("environment") or []
    env = ("; environment: " + ", ".join(f"{e['lane']} {e['key']} {e['before']} -> {e['after']}" for e in envs[:3])
           + (f" (+{len(envs) - 3} more)" if len(envs) > 3 else "")) if envs else "; environment unchanged"
    other = len(prev.get("changed_cases") or [])
    return (f"since the previous run ({prev.get('folder')}/): {n('new_bugs', 'new bug')}, {n('fixed_bugs', 'fixed bug')}; "
            f"{n('new_cases', 'new failing case')}, {n('fixed_cases', 'fixed case')}"
            + (f", {other} failing before and neither failing nor passing now (refused, not run by the EP)" if other else "")
            + env)


# ----------------------------------------------------------------------------------------------
# Bugs shrunk and bundled within the budget
# ----------------------------------------------------------------------------------------------

def shrink_bugs(merged: Path, bugs: list[BG.Bug], budget: float, say: Say, res=None) -> dict:
    """One case per bug of DirectML or the DML EP shrunk and bundled beside ``merged`` within
    ``budget`` seconds (0: none); the example case of each, most cases first. ``res``: the merged
    results already loaded. The lanes gave these results in this job (their canary passed): no
    second preflight."""
    todo = [b for b in bugs if b.party in BG.SHRINK_PARTIES]
    done = {"budget_s": budget, "seconds": 0.0, "bugs": len(todo), "shrunk": 0, "bundled": 0, "errors": []}
    if not todo or budget <= 0:
        return done
    todo.sort(key=lambda b: -len(b.cases))
    t = time.monotonic()
    log = merged.parent / SHRINK_LOG
    say(f"bench: shrinking one case of each of {len(todo)} DirectML / DML EP bug(s) within {budget:.0f} s "
        f"(--shrink-budget) into {merged.parent / SHRUNK_DIR}/ and {merged.parent / BUNDLE_DIR}/ (its output: {log})")
    with open(log, "w", encoding="utf-8", errors="replace") as f:
        def note(m: str) -> None:
            f.write(f"{time.monotonic() - t:7.1f} s  {m}\n")
            f.flush()
        rows = shrink_picks(merged, [(b.example, b.ep, b.signature, len(b.cases)) for b in todo], budget=budget,
                            say=note, loaded=(res.envs, res.records) if res is not None else None, preflight=False)
        for r in rows:
            if r.error:
                note(f"{r.case_id}: {r.error}")
    done["seconds"] = round(time.monotonic() - t, 1)
    done["shrunk"] = sum(r.shrunk is not None for r in rows)
    done["bundled"] = sum("bundle" in r.files for r in rows)
    done["errors"] = [f"{r.case_id}: {r.error}" for r in rows if r.error][:20]
    return done


# ----------------------------------------------------------------------------------------------
# The facts, and the account
# ----------------------------------------------------------------------------------------------

def write_facts(out: Path, records: int, lanes: list[LaneRun], links: dict, shrinking: dict | None,
                previous: dict | None) -> Path:
    doc = {"schema": BG.FACTS_SCHEMA, "records": records,
           "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "expectations": [ln.status() for ln in lanes], "links": links, "shrinking": shrinking,
           "previous": previous}
    return write_text(Path(out) / BENCH_JSON, json.dumps(doc, indent=1, default=str) + "\n")


#: verdicts of a case the lane's EP never computed (refused, not offloaded, not expressible or
#: supported, an error of the bench's own)
NOT_COMPUTED = frozenset({Verdict.EP_REJECTED, Verdict.NOT_OFFLOADED, Verdict.NOT_EXPRESSIBLE, Verdict.NOT_SUPPORTED,
                          Verdict.ERROR})


def ran_nothing(ln: LaneRun) -> bool:
    """A lane with cases whose EP computed none of them (e.g. it refused every session): it could
    not run, whatever its expectations say (an expected FAIL now refused is no failure of one case,
    but a lane of refusals alone tests nothing)."""
    total = sum(ln.counts.values())
    return total > 0 and all(v in NOT_COMPUTED for v, n in ln.counts.items() if n)


def lane_line(ln: LaneRun) -> str:
    counts = ", ".join(f"{v} {ln.counts[v]}" for v in Verdict if ln.counts.get(v))
    state = {0: "", 1: "", 3: " (its canary failed: no verdicts)", 130: " (interrupted)"}.get(ln.code, f" (exit code {ln.code})")
    if ln.checked:
        exp = (f"; {Path(ln.expectations).name}: {ln.expected} expected, {len(ln.unexpected)} unexpected, "
               f"{len(ln.fixed)} fixed" + (f", {ln.changed} expected to fail and now refused or not run (not a "
                                           f"failure: see the report)" if ln.changed else ""))
    elif ln.expectations:
        exp = "; no expectations apply: only CRASH and TIMEOUT count" + (
            f" ({len(ln.unexpected)} crashed or hung)" if ln.unexpected else "")
    else:
        exp = ""
    return f"  {ln.key}: {sum(ln.counts.values())} cases in {ln.seconds:.0f} s: {counts or 'none'}{state}{exp}"


def bugs_line(bugs: list[BG.Bug], known: int, shrinking: dict | None) -> str:
    by = Counter(b.title for b in bugs)
    cases = Counter()
    for b in bugs:
        cases[b.title] += len(b.cases)
    parts = [f"{t} {n} ({cases[t]} case{'s' if cases[t] != 1 else ''})" for t, n in by.items()]
    s = f"bugs: {len(bugs)}" + (f" — {', '.join(parts)}" if parts else "")
    if known:
        s += f"; the CPU EP's known deviations apart: {known} case{'s' if known != 1 else ''}"
    if shrinking and shrinking.get("bugs"):
        s += (f"; {shrinking['shrunk']} of {shrinking['bugs']} DirectML / DML EP bug(s) shrunk, {shrinking['bundled']} "
              f"bundled in {shrinking['seconds']:.0f} s (budget {shrinking['budget_s']:.0f} s)")
    return s


def account(lanes: list[LaneRun], not_run: dict[str, str], report: Path | None, seconds: float,
            bugs: list[BG.Bug], known: int, shrinking: dict | None, previous: dict | None,
            out: Path) -> tuple[list[str], int]:
    """The job's last lines and its exit code: a line per lane, what was not run, the bugs (the
    first :data:`BUG_LINES`), what changed, the unexpected results (a few per lane), the report,
    and one exit line."""
    lines = ["", f"bench: ran in {seconds:.0f} s:"]
    lines += [lane_line(ln) for ln in lanes]
    dml = {k: why for k, why in not_run.items() if set(k.split(", ")) & set(set_up_by("dml"))}   # their own why
    other = [k for k in not_run if k not in dml]
    lines += [f"  not run: {k}: {why}" for k, why in dml.items()]
    if other:
        lines.append(f"  not run: {', '.join(other)} (not installed here; `onnx-dml-bench eps` says why and how)")
    lines.append("  " + bugs_line(bugs, known, shrinking))
    for s in BG.lines(bugs, BUG_LINES):
        lines.append(f"    {s}")
    lines.append("  " + changed_line(previous))
    for ln in lanes:
        for x in ln.unexpected[:3]:
            lines.append(f"    {ln.key}: unexpected: {x}")
        if len(ln.unexpected) > 3:
            lines.append(f"    {ln.key}: ... and {len(ln.unexpected) - 3} more unexpected (in the report)")
        for x in ln.fixed[:3]:
            lines.append(f"    {ln.key}: fixed (remove its entry): {x}")
        if len(ln.fixed) > 3:
            lines.append(f"    {ln.key}: ... and {len(ln.fixed) - 3} more fixed (in the report)")
    lines.append(f"  report: {report}" if report else "  report: none (no lane gave results)")
    bad = [ln for ln in lanes if ln.unexpected or ln.fixed]
    broken = [ln for ln in lanes if ln.code not in (0, 1) or ran_nothing(ln)]
    if bad:
        parts = [f"{ln.key}: {len(ln.unexpected)} unexpected" + (f", {len(ln.fixed)} fixed" if ln.fixed else "")
                 for ln in bad]
        lines.append(f"bench: exit code 1: unexpected results against the shipped expectations ({'; '.join(parts)}); "
                     f"see {report}")
        return lines, 1
    if broken or not lanes:
        names = ", ".join(f"{ln.key} (" + (f"exit code {ln.code}" if ln.code not in (0, 1) else
                                         f"the EP ran none of its {sum(ln.counts.values())} cases: every one "
                                         f"{'/'.join(sorted(ln.counts))}") + ")" for ln in broken) or "no lane"
        lines.append(f"bench: exit code 3: a lane could not run: {names}; the lines above say why")
        return lines, 3
    checked = [ln.key for ln in lanes if ln.checked]
    dml_why = next(iter(dml.values()), "")
    lines.append(f"bench: exit code 0: every result as expected (checked against the shipped expectations: "
                 f"{', '.join(checked) or 'none applies'})" + (f"; DirectML not run: {dml_why}" if dml_why else ""))
    return lines, 0
