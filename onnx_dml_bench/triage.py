"""From a results file to one minimal, handed-over case per failure signature.

``triage`` groups the failing records of a results file by signature (operator, verdict,
attribution, failing outputs, labels: :func:`signature.signature`), takes the smallest case of each
group, shrinks it on the EP of the results while the signature holds, and writes, beside the
results (where the report and JUnit look):

- ``shrunk/<case id>.json``: the minimal case (``run --cases`` reproduces it);
- ``bundle/<case id>/``: the hand-over folder of the *minimal* case (bundle.build), outputs of
  the EP and of the CPU EP from a re-run of the minimal case, today's verdict in its README;
- ``triage.json`` and ``triage.md``: one row per signature (count, the case shrunk, what it
  became, the files).

``<case id>`` is the id of the recorded case that was shrunk, so the report links that FAIL to
its minimal case and bundle. One probing worker serves every shrink (an EP, or a Wine prefix,
starts once).
"""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .outdir import BUNDLE_README, TRIAGE_JSON, TRIAGE_MD, bundle_path, shrunk_path
from .plan import PlanError, RunPlan
from .record import Verdict
from .shrink import NotReproduced, Prober, ShrinkResult, describe, shrink, write_case
from .signature import Signature, signature


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


def _bundle_minimal(res: ShrinkResult, lane, env, folder: Path, rerun_case: bool) -> str:
    """The bundle of the minimal case into ``folder``; returns the re-run's verdict line."""
    from .bundle import build, rerun_sides
    case = res.minimal
    ep_out = cpu_out = None
    how, now = "", ""
    if rerun_case:
        ep_out, cpu_out, how, j = rerun_sides(case, lane, env.optimization or "disabled")
        now = f"**{j.verdict}**" + (f" ({j.attribution})" if j.attribution else "") + f" on `{lane.ep_name}`"
    if folder.exists():
        shutil.rmtree(folder)
    build(case, folder, rec=res.record, env=env, ep_outputs=ep_out, cpu_outputs=cpu_out,
          how=how or "not re-run (the case crashes or hangs the EP): no EP or CPU outputs in this bundle",
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
    from .results import ResultsError, read
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
    from .casefile import CaseFileError, case_from_record
    with Prober(lane, plan.cfg) as probe:
        for i, row in enumerate(rows, 1):
            rec = by_id[row.case_id]
            say(f"[{i}/{len(rows)}] {row.signature.text()} x{row.count}: {row.case_id}")
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
    write(rows, base, results, lane.ep_name)
    return rows


def write(rows: list[Row], out: Path, results: Path, ep_name: str) -> None:
    doc = {"results": results.name, "ep": ep_name, "signatures": [r.to_dict() for r in rows]}
    (out / TRIAGE_JSON).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    lines = [f"# Failure signatures of `{results.name}` on {ep_name}", "",
             "One row per signature (operator, verdict, attribution, failing outputs, labels). The case of "
             "each row is the smallest recorded case of the signature; it was shrunk on the EP while the "
             "signature held. `shrunk/` holds the minimal cases (`onnx-dml-bench run --cases FILE`), "
             "`bundle/` the hand-over folders of the minimal cases (model, data, outputs, `repro.py`, "
             "C++ descriptor, DxDispatch model).", "",
             "| # | signature | cases | shrunk | minimal case | files |", "| --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(rows, 1):
        shr = r.shrunk.summary() if r.shrunk is not None else r.error
        links = " ".join(f"[{k}]({v})" for k, v in r.files.items() if k in ("shrunk", "bundle"))
        minimal = f"`{r.shrunk.minimal.id}`" if r.shrunk is not None else ""
        lines.append(f"| {i} | `{r.signature.text()}` | {r.count} | {shr} | {minimal} | {links} |")
    (out / TRIAGE_MD).write_text("\n".join(lines) + "\n", encoding="utf-8")


def describe_row(r: Row) -> str:
    if r.shrunk is None:
        return f"{r.signature.text()} x{r.count}: {r.error}"
    return f"{r.signature.text()} x{r.count}: {describe(r.shrunk.original)} -> {describe(r.shrunk.minimal)}"
