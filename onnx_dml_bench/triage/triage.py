"""From a results file to minimal, handed-over cases: one case (``shrink_command``,
``bundle_command``) or one per failure signature (``triage``).

``triage`` groups the failing records of a results file by signature (operator, verdict,
attribution, failing outputs, labels: :func:`signature.signature`), takes the smallest case of each
group, shrinks it on the EP of the results while the signature holds, and writes, beside the
results (where the report and JUnit look):

- ``shrunk/<case id>.json``: the minimal case (``run --cases`` reproduces it);
- ``bundle/<case id>/``: the hand-over folder of the *minimal* case (``bundle.build``), outputs of
  the EP and of the CPU EP from a re-run of the minimal case, today's verdict in its README;
- ``triage.json`` and ``triage.md``: one row per signature (count, the case shrunk, what it
  became, the files).

``<case id>`` is the id of the recorded case that was shrunk, so the report links that FAIL to
its minimal case and bundle. One probing worker serves every shrink (an EP, or a Wine prefix,
starts once).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import verdict as V
from ..bundle.build import BundleError, build
from ..casefile import CaseFileError, case_from_record, dump
from ..cases import Case
from ..errors import UnsafePath
from ..lanes.base import Lane, RunConfig, descriptor_case
from ..lanes.catalog import resolve
from ..ops.base import make_model
from ..outcome import Outcome
from ..outdir import BUNDLE_README, TRIAGE_JSON, TRIAGE_MD, bundle_path, command, shrunk_path, write_text
from ..plan import PlanError, RunPlan
from ..record import Verdict
from ..results import ResultsError, read
from ..signature import Signature, signature
from .prober import Prober
from .shrink import NotReproduced, ShrinkResult, describe, shrink


# ----------------------------------------------------------------------------------------------
# One case of a results file
# ----------------------------------------------------------------------------------------------

class ShrinkError(ValueError):
    """A problem with the shrink command's arguments or inputs (one line for a person)."""


def find_record(results: Path, case_id: str):
    """(record, environment) of ``case_id`` in a results file."""
    res = read(results)
    recs = [r for r in res.records if r.case_id == case_id]
    if not recs:
        raise ShrinkError(f"{results}: no record of case {case_id!r}")
    rec = recs[-1]
    env = next((e for e in res.envs if e.ep == rec.ep), res.envs[-1])
    return rec, env


def write_case(res: ShrinkResult, path: Path) -> Path:
    """The minimal case as a case file (``casefile.dump``), with what it was shrunk from."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() != ".json":
        dump([res.minimal], path)
        return path
    doc = {"schema": "onnx-dml-bench/cases/1", "cases": [res.minimal.to_dict()]}
    doc["cases"][0]["note"] = f"shrunk from {res.original.id}: {res.summary()}"
    doc["shrunk"] = res.to_dict()
    write_text(path, json.dumps(doc, indent=1) + "\n")
    return path


def shrink_command(case_id: str, results: Path, ep: str | None, ep_options: dict | None, out: Path | None,
                   time_limit: float | None, say: Callable[[str], None], hold=None) -> tuple[ShrinkResult, Path]:
    """Shrink one failing case of a results file on the EP of its record (or ``ep``); write the
    minimal case beside the results (``shrunk/<case id>.json``) or to ``out``. ``hold(path)``: a
    context manager held while the file is written (the command line's folder lock)."""
    path = Path(out) if out else shrunk_path(results, case_id)     # a case id that is no file name: refused first
    if hold is not None:
        with hold(path):      # a folder another command holds: said now, not after the shrink
            pass
    rec, env = find_record(results, case_id)
    want = signature(rec)
    if want is None:
        raise ShrinkError(f"{case_id}: verdict {rec.verdict} is not a failure; nothing to shrink")
    try:
        case = case_from_record(rec)
    except CaseFileError as e:
        raise ShrinkError(str(e)) from None
    try:
        plan = RunPlan.probe(ep, env, ep_options)      # the EP's preflight (known-answer canary) first
    except PlanError as e:
        raise ShrinkError(str(e)) from None
    if ep and plan.lane.ep_name != rec.ep:
        want = None        # another EP: shrink whatever signature the case has there
    say(f"shrinking {case_id} on {plan.lane.ep_name}: {want.text() if want else 'its signature on this EP'}")
    with Prober(plan.lane, plan.cfg) as probe:
        try:
            res = shrink(case, probe, want=want, time_limit=time_limit)
        except NotReproduced as e:
            raise ShrinkError(f"the failure does not reproduce: {e}") from None
    with (hold(path) if hold is not None else contextlib.nullcontext()):
        write_case(res, path)
    return res, path


def run_sides(case: Case, lane: Lane, optimization: str = "disabled") -> tuple[dict, dict | None, str]:
    """(EP outputs or error outcome, CPU outputs or None, how) by the graph's output names."""
    frag = case.operator.build(case, "")
    model = make_model([frag], case.opset, name=case.id).SerializeToString()
    inputs = case.inputs()
    feeds = {frag.input_names[k]: v for k, v in inputs.items()}
    names = list(frag.output_names.values())
    cfg = RunConfig(optimization=optimization)
    backend = lane.make_backend(cfg)
    try:
        return _run_sides(backend, case, lane, cfg, model, inputs, feeds, names)
    finally:
        backend.close()       # what it holds: DirectML under Wine gives its prefix slot back


def rerun_sides(case: Case, lane: Lane, optimization: str = "disabled"):
    """Run the case again on ``lane`` and the CPU EP and judge it: (EP outputs or None, CPU
    outputs or None, how they were made, the judgement)."""
    ep_o, cpu_o, how = run_sides(case, lane, optimization)
    how += f" ({_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')})"
    frag = case.operator.build(case, "")
    direct = lane.runs_descriptors
    where = None if direct else V.placement([n.name for n in frag.nodes], ep_o.assignment, lane.ep_name, lane.is_cpu)
    local = dict(frag.output_names)

    def loc(o):
        if o is None or not o.ok:
            return o
        return Outcome(True, o.stage, None, {k: o.outputs[g] for k, g in local.items() if g in o.outputs},
                       o.assignment)
    j = V.judge(case, case.inputs(), loc(ep_o), None if lane.is_cpu else loc(cpu_o), where,
                ep_name=lane.ep_name, ep_is_cpu=lane.is_cpu, semantics="dml" if direct else "onnx")
    if not ep_o.ok:
        how += f"; the EP gave no outputs ({ep_o.stage}: {(ep_o.error or '')[:300]})"
    return (ep_o.outputs if ep_o.ok else None, cpu_o.outputs if cpu_o is not None and cpu_o.ok else None, how, j)


def _run_sides(backend, case, lane, cfg, model, inputs, feeds, names):
    if lane.runs_descriptors:
        ep = backend.run(descriptor_case(case), inputs)
        cpu_backend = resolve("cpu").make_backend(cfg)
        (cpu,) = cpu_backend.run_many([(model, feeds, names, "ep")])
        return ep, cpu, f"descriptor dispatched on DirectML ({lane.ep_name}); CPU side: ONNX Runtime's CPU EP"
    jobs = [(model, feeds, names, "ep")]
    if not lane.is_cpu:
        jobs.append((model, feeds, names, "cpu"))
    outs = backend.run_many(jobs)
    ep = outs[0]
    cpu = outs[1] if len(outs) > 1 else outs[0]
    return ep, cpu, f"ONNX graph run on {lane.ep_name} and on the CPU EP of the same ONNX Runtime build"


def bundle_command(case_id: str, results: Path, out: Path, ep: str | None, *, rerun: bool = True,
                   say: Callable[[str], None] = print, hold=None) -> Path:
    """The bundle of a case of a results file; ``rerun``: run the case again on the EP of the
    record (or ``ep``) and the CPU EP to include their outputs and today's verdict. ``hold(out)``:
    a context manager held while the folder is written."""
    if hold is not None:
        with hold(out):       # a folder another command holds: said now, not after the re-run
            pass
    try:
        rec, env = find_record(results, case_id)
    except ShrinkError as e:
        raise BundleError(str(e)) from None
    try:
        case = case_from_record(rec)
    except CaseFileError as e:
        raise BundleError(str(e)) from None
    ep_out = cpu_out = None
    how, now = "", ""
    if rerun:
        try:
            lane = RunPlan.probe(ep, env).lane      # the EP's preflight (known-answer canary) first
        except PlanError as e:
            raise BundleError(str(e)) from None
        ep_out, cpu_out, how, j = rerun_sides(case, lane, env.optimization or "disabled")
        now = f"**{j.verdict}**" + (f" ({j.attribution})" if j.attribution else "") + f" on `{lane.ep_name}`" + \
            (" — same as recorded" if (j.verdict, j.attribution) == (rec.verdict, rec.attribution) else
             f" — recorded {rec.verdict}") + (f": {j.reason}" if j.reason else "")
        say(f"re-run: {now}")
    with (hold(out) if hold is not None else contextlib.nullcontext()):
        return build(case, out, rec=rec, env=env, ep_outputs=ep_out, cpu_outputs=cpu_out, how=how, now_verdict=now)


# ----------------------------------------------------------------------------------------------
# One case per failure signature
# ----------------------------------------------------------------------------------------------

class TriageError(ValueError):
    """A problem with the command's arguments or inputs (one line for a person)."""


@dataclass
class Row:
    signature: Signature
    count: int
    case_id: str                     # the recorded case shrunk (the smallest of its signature)
    shrunk: ShrinkResult | None = None
    error: str = ""
    files: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {"signature": self.signature.to_dict(), "text": self.signature.text(), "count": self.count,
             "case": self.case_id, **self.files}
        if self.shrunk is not None:
            d.update({"minimal": self.shrunk.minimal.id, "summary": self.shrunk.summary(),
                      "minimal_verdict": getattr(self.shrunk.record, "verdict", None)})
        if self.error:
            d["error"] = self.error
        return d


def _elements(rec) -> int:
    sizes = (rec.descriptor or {}).get("InputSizes") or []
    return math.prod(sizes) if sizes else 0


def groups(records, verdicts=Verdict.FAILED) -> list[Row]:
    """One row per signature among ``records`` whose verdict is in ``verdicts`` (by default what
    is wrong or broken: a refusal or a node left on another EP is a capability statement; name
    EP_REJECTED / NOT_OFFLOADED to triage them too), with the smallest case of the signature
    (fewest input elements; the first met on a tie), most frequent signature first."""
    best: dict[Signature, object] = {}
    count: dict[Signature, int] = {}
    for r in records:
        if r.verdict not in verdicts:
            continue
        s = signature(r)
        if s is None:
            continue
        count[s] = count.get(s, 0) + 1
        if s not in best or _elements(r) < _elements(best[s]):
            best[s] = r
    return [Row(s, count[s], best[s].case_id)
            for s in sorted(best, key=lambda s: (-count[s], s.op, s.text()))]


def _bundle_minimal(res: ShrinkResult, lane, env, folder: Path, rerun_case: bool,
                    not_rerun: str = "the case crashes or hangs the EP") -> str:
    """The bundle of the minimal case into ``folder``; returns the re-run's verdict line."""
    case = res.minimal
    ep_out = cpu_out = None
    how, now = "", ""
    if rerun_case:
        ep_out, cpu_out, how, j = rerun_sides(case, lane, env.optimization or "disabled")
        now = f"**{j.verdict}**" + (f" ({j.attribution})" if j.attribution else "") + f" on `{lane.ep_name}`"
    if folder.exists():
        shutil.rmtree(folder)
    build(case, folder, rec=res.record, env=env, ep_outputs=ep_out, cpu_outputs=cpu_out,
          how=how or f"not re-run ({not_rerun}): no EP or CPU outputs in this bundle",
          now_verdict=now)
    readme = folder / BUNDLE_README
    text = readme.read_text(encoding="utf-8").split("\n", 2)
    note = (f"The minimal case of the failure signature `{res.signature.text()}`, shrunk from "
            f"`{res.original.id}`: {res.summary()}.")
    readme.write_text("\n".join([text[0], "", note] + text[1:]), encoding="utf-8")
    return now


def triage(results: Path, *, ep: str | None = None, ep_options: dict | None = None,
           verdicts=Verdict.FAILED, time_limit: float = 180.0, bundles: bool = True,
           say: Callable[[str], None] = print) -> list[Row]:
    results = Path(results)
    try:
        res = read(results)
    except (ResultsError, OSError) as e:
        raise TriageError(str(e)) from None
    rows = groups(res.records, verdicts)
    if not rows:
        say(f"{results}: no record with a verdict in {', '.join(verdicts)}: nothing to triage")
        return rows
    by_id = {r.case_id: r for r in res.records}
    first = by_id[rows[0].case_id]
    env = next((e for e in res.envs if e.ep == first.ep), res.envs[-1] if res.envs else None)
    if env is None:
        raise TriageError(f"{results}: no environment record: the EP and its options are unknown")
    try:
        plan = RunPlan.probe(ep, env, ep_options)      # the EP's preflight (known-answer canary) first
    except PlanError as e:
        raise TriageError(str(e)) from None
    lane = plan.lane
    say(f"{len(rows)} signature(s) in {results}, shrinking one case of each on {lane.ep_name}")
    base = results.parent
    with Prober(lane, plan.cfg) as probe:
        for i, row in enumerate(rows, 1):
            rec = by_id[row.case_id]
            say(f"[{i}/{len(rows)}] {row.signature.text()} x{row.count}: {row.case_id}")
            try:        # the files of the row are named after its case: one that names no file is not shrunk
                shrunk_path(results, row.case_id)
                bundle_path(results, row.case_id)
            except UnsafePath as e:
                row.error = f"not shrunk: {e}"
                say(f"  {row.error}")
                continue
            try:
                case = case_from_record(rec)
                row.shrunk = shrink(case, probe, want=None if ep and lane.ep_name != rec.ep else row.signature,
                                    time_limit=time_limit)
            except (NotReproduced, CaseFileError) as e:
                row.error = f"not shrunk: {e}"
                say(f"  {row.error}")
                continue
            path = write_case(row.shrunk, shrunk_path(results, row.case_id))
            row.files["shrunk"] = str(path.relative_to(base))
            say(f"  {row.shrunk.summary()}")
    if bundles:
        for row in rows:
            if row.shrunk is None:
                continue
            folder = bundle_path(results, row.case_id)
            try:
                # a case that crashed or hung the EP (Verdict.LOST) would do it again: not re-run
                rerun = row.signature.verdict not in Verdict.LOST
                now = _bundle_minimal(row.shrunk, lane, env, folder, rerun_case=rerun)
            except Exception as e:  # noqa: BLE001 - one bundle that cannot be written loses no other
                row.error = f"bundle not written: {type(e).__name__}: {e}"
                say(f"  {row.shrunk.minimal.id}: {row.error}")
                continue
            row.files["bundle"] = str((folder / BUNDLE_README).relative_to(base))
            if now:
                row.files["bundle_rerun"] = now
    write(rows, base, results, lane.ep_name, lane.ep_argument())
    return rows


def write(rows: list[Row], out: Path, results: Path, ep_name: str, ep_key: str = "cpu") -> None:
    doc = {"results": results.name, "ep": ep_name, "signatures": [r.to_dict() for r in rows]}
    write_text(out / TRIAGE_JSON, json.dumps(doc, indent=1) + "\n")
    lines = [f"# Failure signatures of `{results.name}` on {ep_name}", "",
             "One row per signature (operator, verdict, attribution, failing outputs, labels). The case of "
             "each row is the smallest recorded case of the signature; it was shrunk on the EP while the "
             "signature held. `shrunk/` holds the minimal cases (`onnx-dml-bench run --cases FILE`), "
             "`bundle/` the hand-over folders of the minimal cases (model, data, outputs, `repro.py`, "
             "C++ descriptor, DxDispatch model).", "",
             "| # | signature | cases | shrunk | minimal case | files | run it again (in this folder) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(rows, 1):
        shr = r.shrunk.summary() if r.shrunk is not None else r.error
        links = " ".join(f"[{k}]({v})" for k, v in r.files.items() if k in ("shrunk", "bundle"))
        minimal = f"`{r.shrunk.minimal.id}`" if r.shrunk is not None else ""
        again = (f"``{command('run', '--ep', ep_key, '--cases', r.files['shrunk'])}``" if "shrunk" in r.files else
                 f"``{command('shrink', r.case_id, '--from', results.name, '--ep', ep_key)}``")
        lines.append(f"| {i} | {_md(f'`{r.signature.text()}`')} | {r.count} | {_md(shr)} | {minimal} | {links} | "
                     f"{_md(again)} |")
    write_text(out / TRIAGE_MD, "\n".join(lines) + "\n")


def _md(text: str) -> str:
    """A table cell of triage.md: on one line, its bars escaped (a text from a results file cannot
    end the cell or the row)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def describe_row(r: Row) -> str:
    if r.shrunk is None:
        return f"{r.signature.text()} x{r.count}: {r.error}"
    return f"{r.signature.text()} x{r.count}: {describe(r.shrunk.original)} -> {describe(r.shrunk.minimal)}"


# ----------------------------------------------------------------------------------------------
# Chosen cases within a time budget (the main job: one case per bug)
# ----------------------------------------------------------------------------------------------

#: the least time a shrink is started with (the canary and the first probe of a lane come first)
MIN_SHRINK_S = 4.0
#: the part of the budget for shrinking; the rest for the bundles' re-runs
SHRINK_SHARE = 0.7


class _Until:
    """A probe that stops at a deadline inside a round: the round's candidates go to ``probe`` in
    chunks, and once ``deadline`` has passed the rest go unprobed (the reducer takes an unprobed
    candidate as one that does not hold, and ends at its own deadline check). The first chunk of a
    round always runs, so the shrink's first probe (the case itself) is answered."""

    CHUNK = 16

    def __init__(self, probe, deadline: float, clock: Callable[[], float]):
        self.probe, self.deadline, self.clock = probe, deadline, clock

    @property
    def cases(self) -> int:
        return getattr(self.probe, "cases", 0)

    def __call__(self, cases: list) -> dict:
        out: dict = {}
        for i in range(0, len(cases), self.CHUNK):
            if i and self.clock() > self.deadline:
                break
            out.update(self.probe(cases[i:i + self.CHUNK]))
        return out


def shrink_picks(results: Path, picks: list[tuple[str, str, Signature, int]], *, budget: float,
                 say: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic,
                 loaded=None, preflight: bool = True) -> list[Row]:
    """Shrink and bundle one recorded case per pick — (case id, its record's EP, the signature to
    keep, how many cases share it), most important first — within ``budget`` seconds in all,
    beside ``results`` (``shrunk/<case id>.json``, ``bundle/<case id>/``). ``loaded``: the results'
    (environments, records) already read. The picks of one lane share one probing worker (and its
    preflight, unless ``preflight`` is False: a lane that has just given these results); the
    shrinking time (:data:`SHRINK_SHARE` of the budget) is shared among the lanes by their number
    of picks, and within a lane each pick in turn gets an equal share of what is left, at least
    :data:`MIN_SHRINK_S`, and stops there with the smallest case found so far; a pick met with too
    little time left is not shrunk (its row says so). Every shrunk case is bundled; a bundle re-runs
    its minimal case on the lane (the EP's and the CPU EP's outputs) only while the budget leaves
    time for it. Never raises for one pick: its row carries the error."""
    results = Path(results)
    t0 = clock()
    deadline = t0 + budget
    shrink_deadline = t0 + budget * SHRINK_SHARE
    rows = [Row(sig, n, cid) for cid, _, sig, n in picks]
    if not rows:
        return rows
    if loaded is None:
        try:
            got = read(results)
        except (ResultsError, OSError) as e:
            for row in rows:
                row.error = f"not shrunk: {e}"
            return rows
        loaded = (got.envs, got.records)
    all_envs, records = loaded
    recs = {(r.case_id, r.ep): r for r in records}
    envs = {e.env_id: e for e in all_envs}
    lanes: dict[str, list[tuple[Row, object]]] = {}
    for row, (cid, ep, _, _) in zip(rows, picks):
        rec = recs.get((cid, ep))
        if rec is None:
            row.error = f"not shrunk: no record of {cid} on {ep}"
            continue
        lanes.setdefault(rec.env_id or "", []).append((row, rec))
    left_rows = sum(len(v) for v in lanes.values())
    spent = "not shrunk: the time budget was spent (--shrink-budget)"
    shrunk: list[tuple[Row, object, object]] = []          # (row, lane, env)
    for env_id, items in lanes.items():
        env = envs.get(env_id) or next((e for e in all_envs if e.ep == items[0][1].ep), None)
        lane_deadline = clock() + (shrink_deadline - clock()) * len(items) / max(left_rows, 1)
        left_rows -= len(items)
        if lane_deadline - clock() < MIN_SHRINK_S * 2 or env is None:
            for row, _ in items:
                row.error = spent if env is not None else "not shrunk: no environment record"
            continue
        t = clock()
        try:
            plan = RunPlan.probe(None, env, preflight=preflight)
        except PlanError as e:
            for row, _ in items:
                row.error = f"not shrunk: {e}"
            continue
        lane = plan.lane
        with Prober(lane, plan.cfg) as probe:
            try:        # the worker starts (a Wine process) before the shares are measured out
                probe([case_from_record(items[0][1])])
            except Exception:  # noqa: BLE001 - the shrink below says what is wrong with the case
                pass
            say(f"{lane.ep_name}: {'preflight and ' if preflight else ''}worker started, {clock() - t:.1f} s")
            for i, (row, rec) in enumerate(items):
                share = max(MIN_SHRINK_S, (lane_deadline - clock()) / (len(items) - i))
                if clock() + share > lane_deadline + 1:
                    row.error = spent
                    continue
                t = clock()
                try:
                    path = shrunk_path(results, row.case_id)
                    bundle_path(results, row.case_id)
                    until = _Until(probe, clock() + share * 0.9, clock)
                    row.shrunk = shrink(case_from_record(rec), until, want=row.signature, time_limit=share * 0.8)
                except (NotReproduced, CaseFileError, UnsafePath) as e:
                    row.error = f"not shrunk: {e}"
                    continue
                except Exception as e:  # noqa: BLE001 - one pick that cannot be shrunk loses no other
                    row.error = f"not shrunk: {type(e).__name__}: {e}"
                    continue
                row.files["shrunk"] = str(write_case(row.shrunk, path).relative_to(results.parent).as_posix())
                say(f"{row.signature.text()}: {row.shrunk.summary()} ({clock() - t:.1f} s of {share:.1f} s)")
                shrunk.append((row, lane, env))
    rerun_s = 10.0          # what a re-run costs, as first guessed, then as measured
    for i, (row, lane, env) in enumerate(shrunk):
        folder = bundle_path(results, row.case_id)
        lost = row.signature.verdict in Verdict.LOST
        rerun = not lost and deadline - clock() > rerun_s * 1.2 + (len(shrunk) - i - 1)
        t = clock()
        try:
            now = _bundle_minimal(row.shrunk, lane, env, folder, rerun_case=rerun,
                                  not_rerun="the case crashes or hangs the EP" if lost else "the time budget was spent")
        except Exception as e:  # noqa: BLE001 - one bundle that cannot be written loses no other
            row.error = f"bundle not written: {type(e).__name__}: {e}"
            continue
        if rerun:
            rerun_s = max(rerun_s * 0.5, clock() - t)
        say(f"bundle {folder.name}: {'re-run, ' if rerun else ''}{clock() - t:.1f} s")
        row.files["bundle"] = folder.relative_to(results.parent).as_posix()
        if now:
            row.files["bundle_rerun"] = now
    return rows
