"""A FAIL confirmed alone, and repeated runs: the runner re-runs alone a case that failed in a
session shared with other cases (BATCH_DEPENDENT when it passes alone and fails again shared),
``--repeat`` runs each session several times (FLAKY, NONDETERMINISTIC); ``verdict.settle`` and
``verdict.of_runs`` decide; expectations can mark a case flaky. The faults come from the test
hook of ``execute.FAULTS_ENV`` (a fake EP whose answers depend on the session or the run), on the
CPU EP and on the DirectML lanes, and from real failures of the CPU EP."""
from __future__ import annotations

import json

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench import verdict as V
from onnx_dml_bench.cli import main
from onnx_dml_bench.execute import FAULTS_ENV, RunConfig, run_batch, run_cases
from onnx_dml_bench.expectations import parse as parse_expectations
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.record import FAIL_ON_DEFAULT, CaseRecord, Runs, parse, to_json

CPU = resolve("cpu")


def _mp2(n=8):
    cases = [c for c in registry.get("max_pooling2").sweep("smoke") if c.family not in ("nan", "inf")][:n]
    assert len(cases) == n
    return cases


@pytest.fixture(scope="module")
def passing():
    """Max-pooling cases the CPU EP passes alone and together (exact outputs)."""
    cases = _mp2(10)
    recs = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=64))}
    good = [c for c in cases if recs[c.id].verdict == "PASS"]
    assert len(good) >= 6
    return good[:6]


def _run(cases, monkeypatch=None, faults=None, **cfg) -> dict:
    if faults is not None:
        monkeypatch.setenv(FAULTS_ENV, json.dumps(faults))
    return {r.case_id: r for r in run_cases(cases, CPU, RunConfig(**{"batch_size": 64, **cfg}))}


# ----------------------------------------------------------------------------------------------
# verdict.settle and verdict.of_runs
# ----------------------------------------------------------------------------------------------

def J(verdict, reason="", **kw):
    return V.Judgement(verdict, reason=reason or verdict.lower(), **kw)


def test_runs_that_agree_give_their_verdict():
    j = V.settle([J("PASS"), J("PASS")], repeat=2)
    assert j.verdict == "PASS" and j.finding is None and j.runs.batch == ["PASS", "PASS"]
    assert V.settle([J("FAIL", attribution="EP_WRONG")]).runs is None          # one run: nothing to record


def test_verdicts_that_differ_between_identical_runs_are_flaky():
    j = V.settle([J("PASS"), J("FAIL", "Y: 1/4 differ", attribution="EP_WRONG"), J("PASS")], repeat=3)
    assert j.verdict == "FLAKY" and j.attribution == "EP_WRONG"
    assert "PASS, FAIL, PASS" in j.reason and "run 2: Y: 1/4 differ" in j.reason


def test_outputs_that_differ_between_runs_are_nondeterministic_whatever_the_verdict():
    j = V.settle([J("PASS"), J("PASS")], repeat=2, differ={"Y": 3})
    assert (j.verdict, j.finding) == ("PASS", "NONDETERMINISTIC")
    assert "finding:NONDETERMINISTIC" in j.labels and "Y: 3 elements" in j.reason
    j = V.settle([J("FAIL"), J("FAIL")], repeat=2, differ={"Y": 1})
    assert j.verdict == "FAIL" and j.finding == "NONDETERMINISTIC"


def test_a_failure_confirmed_alone_stays_a_failure():
    j = V.settle([J("FAIL", "shared")], batch_size=5, alone=[J("FAIL", "alone", attribution="EP_WRONG")])
    assert j.verdict == "FAIL" and j.reason == "alone" and j.source == "alone"
    assert j.runs.note == "confirmed alone" and (j.runs.batch, j.runs.alone) == (["FAIL"], ["FAIL"])


def test_wrong_shared_twice_and_right_alone_is_batch_dependent():
    j = V.settle([J("FAIL", "Y: 2/9 differ"), J("FAIL", "Y: 2/9 differ")], batch_size=8, alone=[J("PASS", "")])
    assert (j.verdict, j.finding, j.source) == ("PASS", "BATCH_DEPENDENT", "alone")
    assert "7 other cases" in j.reason and "Y: 2/9 differ" in j.reason and j.runs.batch_reason == "Y: 2/9 differ"
    # a CPU finding stays beside it, the BATCH_DEPENDENT first
    j = V.settle([J("FAIL"), J("FAIL")], batch_size=2, alone=[J("PASS", labels=["finding:EP_CPU_DIFFER"],
                                                                finding="EP_CPU_DIFFER")])
    assert j.finding == "BATCH_DEPENDENT" and {"finding:BATCH_DEPENDENT", "finding:EP_CPU_DIFFER"} <= set(j.labels)


def test_wrong_shared_once_and_right_alone_cannot_be_told_from_a_race():
    assert V.settle([J("FAIL")], batch_size=8, alone=[J("PASS")]).verdict == "FLAKY"
    # the shared session again: right this time -> the verdicts of identical runs differ
    j = V.settle([J("FAIL"), J("PASS")], batch_size=8, alone=[J("PASS")])
    assert j.verdict == "FLAKY" and j.finding is None


def test_alone_without_outputs_keeps_the_shared_failure():
    j = V.settle([J("FAIL", "Y differs")], batch_size=4, alone=[J("EP_REJECTED", "refused")])
    assert j.verdict == "FAIL" and "refused" in j.reason and j.runs.alone == ["EP_REJECTED"]


def test_runs_round_trip_in_records_and_old_records_read():
    rec = CaseRecord("c", "max_pooling2", "D", "FLOAT32", 12, "random", 1, {}, "CPUExecutionProvider", "PASS",
                     finding="BATCH_DEPENDENT", labels=["finding:BATCH_DEPENDENT", "finding:EP_CPU_DIFFER"],
                     runs=Runs(repeat=2, batch_size=3, batch=["FAIL", "FAIL"], alone=["PASS", "PASS"], differ={"Y": 1}))
    back = parse(json.loads(to_json(rec)))
    assert back.runs == rec.runs and back.findings == ("BATCH_DEPENDENT", "EP_CPU_DIFFER")
    old = json.loads(to_json(rec))
    del old["runs"]
    assert parse(old).runs is None


# ----------------------------------------------------------------------------------------------
# The runner, with a fake EP (FAULTS_ENV) on the CPU EP
# ----------------------------------------------------------------------------------------------

def test_a_case_wrong_only_in_a_shared_session_is_batch_dependent(passing, monkeypatch):
    victim = passing[2]
    recs = _run(passing, monkeypatch, {victim.id: "batch"})
    r = recs[victim.id]
    assert (r.verdict, r.finding) == ("PASS", "BATCH_DEPENDENT"), r.reason
    assert r.runs.batch == ["FAIL", "FAIL"] and r.runs.alone == ["PASS"] and r.runs.batch_size == len(passing)
    assert "differ" in r.runs.batch_reason
    assert all(recs[c.id].verdict == "PASS" and not recs[c.id].findings for c in passing if c is not victim)
    # alone from the start (a batch of one): nothing is shared, nothing is wrong
    alone = _run([victim], monkeypatch, {victim.id: "batch"}, batch_size=1)
    assert alone[victim.id].verdict == "PASS" and alone[victim.id].runs is None


def test_a_race_that_struck_the_shared_session_once_is_flaky_not_batch_dependent(passing, monkeypatch):
    victim = passing[1]
    recs = _run(passing, monkeypatch, {victim.id: "once"})
    r = recs[victim.id]
    assert r.verdict == "FLAKY" and "BATCH_DEPENDENT" not in r.findings, r.reason
    assert r.runs.batch == ["FAIL", "PASS"] and r.runs.alone == ["PASS"]


def test_a_real_failure_is_confirmed_alone():
    """The CPU EP's NaN handling of MaxPool fails the reference (a known deviation): wrong in a
    shared session and wrong alone."""
    cases = [c for c in registry.get("max_pooling2").sweep("smoke")][:8]
    recs = _run(cases)
    failed = [r for r in recs.values() if r.verdict == "FAIL"]
    assert failed
    for r in failed:
        assert r.runs is not None and r.runs.note == "confirmed alone", r.case_id
        assert r.runs.batch == ["FAIL"] and r.runs.alone == ["FAIL"] and r.runs.batch_size == len(cases)
    # without confirmation (and in a batch of one) the verdicts are the same
    assert {k: r.verdict for k, r in _run(cases, confirm=False).items()} == {k: r.verdict for k, r in recs.items()}
    assert all(r.runs is None for r in _run(cases, batch_size=1).values())


def test_repeat_finds_flaky_and_nondeterministic_cases(passing, monkeypatch):
    flaky, drifting = passing[0], passing[3]
    recs = _run(passing, monkeypatch, {flaky.id: "flaky", drifting.id: "drift"}, repeat=3)
    r = recs[flaky.id]
    assert r.verdict == "FLAKY" and r.runs.batch[:3] == ["PASS", "FAIL", "PASS"] and r.runs.repeat == 3
    assert "NONDETERMINISTIC" in r.findings and r.runs.alone == ["PASS", "FAIL", "PASS"]
    r = recs[drifting.id]                      # exact outputs: runs 2 and 3 move, run 1 is right
    assert r.verdict == "FLAKY" and r.runs.differ and "NONDETERMINISTIC" in r.findings
    for c in passing:
        if c not in (flaky, drifting):
            assert recs[c.id].verdict == "PASS" and not recs[c.id].findings and recs[c.id].runs.batch == ["PASS"] * 3


def _roomy_average():
    """An AveragePool case whose error bound at its first element is several ULP wide."""
    op = registry.get("average_pooling1")
    for c in op.sweep("smoke"):
        if c.dtype != "FLOAT32" or c.family != "random":
            continue
        ins = c.inputs()
        ref = op.expected(c, ins)
        y = ref["Y"].reshape(-1)[0]
        b = op.reference_bound(c, ins, ref)["Y"]           # an array, or a pair (below, above)
        b = np.minimum(*b) if isinstance(b, tuple) else b
        if np.reshape(b, -1)[0] >= 4 * np.spacing(abs(y)):
            return c
    raise AssertionError("no such case")


def test_outputs_that_move_within_the_bound_pass_and_are_nondeterministic(monkeypatch):
    case = _roomy_average()
    recs = _run([case] + _mp2(3), monkeypatch, {case.id: "drift"}, repeat=3)
    r = recs[case.id]
    assert (r.verdict, r.finding) == ("PASS", "NONDETERMINISTIC"), r.reason
    assert r.runs.differ == {"Y": 1} and r.runs.alone is None


def test_repeat_on_a_deterministic_ep_changes_no_verdict():
    cases = [c for op in registry.OPERATORS.values() for c in op.sweep("smoke")][::3]
    once = _run(cases)
    thrice = _run(cases, repeat=3)
    assert {k: r.verdict for k, r in thrice.items()} == {k: r.verdict for k, r in once.items()}
    assert not any(r.verdict == "FLAKY" or "NONDETERMINISTIC" in r.findings for r in thrice.values())
    ran = [r for r in thrice.values() if r.outputs]
    assert ran and all(r.runs is not None and len(r.runs.batch) == 3 for r in ran)


# ----------------------------------------------------------------------------------------------
# Gating: the command line, expectations
# ----------------------------------------------------------------------------------------------

def _case_file(tmp_path, cases):
    from onnx_dml_bench.casefile import dump
    path = tmp_path / "cases.json"
    dump(cases, path)
    return path


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_batch_dependent_fails_the_run_by_default_and_can_be_gated_off(passing, monkeypatch, tmp_path, capsys):
    victim = passing[4]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim.id: "batch"}))
    cases = _case_file(tmp_path, passing)
    assert "BATCH_DEPENDENT" in FAIL_ON_DEFAULT
    rc, out = _cli(capsys, "run", "--cases", cases, "--out", tmp_path / "a", "--no-report")
    assert rc == 1, out
    rc, out = _cli(capsys, "run", "--cases", cases, "--out", tmp_path / "b", "--fail-on", "FAIL", "--no-report")
    assert rc == 0, out
    # listed as known: expected, the exit code 0
    known = tmp_path / "known.yaml"
    rc, out = _cli(capsys, "expectations", "--from", tmp_path / "a" / "results.jsonl", "--out", known)
    assert rc == 0 and "verdict: BATCH_DEPENDENT" in known.read_text(), out
    rc, out = _cli(capsys, "run", "--cases", cases, "--out", tmp_path / "c", "--expectations", known, "--no-report")
    assert rc == 0 and "1 expected" in out, out


def test_repeat_is_an_option_of_run_recorded_in_its_environment(passing, tmp_path, capsys):
    cases = _case_file(tmp_path, passing[:2])
    rc, out = _cli(capsys, "run", "--cases", cases, "--out", tmp_path / "r", "--repeat", "2")
    assert rc == 0, out
    from onnx_dml_bench.results import read
    got = read(tmp_path / "r" / "results.jsonl")
    assert got.envs[0].get("repeat") == 2 and got.envs[0].get("selection")["repeat"] == 2
    assert all(r.runs.batch == ["PASS", "PASS"] for r in got.records)
    # a resume must use the same repeat
    rc, out = _cli(capsys, "run", "--cases", cases, "--out", tmp_path / "r", "--resume")
    assert rc == 2 and "repeat" in out, out


def _rec(case_id, verdict, finding=None):
    return {"case_id": case_id, "ep": "E", "verdict": verdict, "finding": finding,
            "labels": [f"finding:{finding}"] if finding else []}


def test_expectations_mark_a_case_flaky():
    known = parse_expectations({"version": 1, "expectations": [{"cases": "c-*", "verdict": "FLAKY"}]})
    for v in ("PASS", "FAIL", "FLAKY"):
        cls = known.classify([_rec("c-1", v)])
        assert (len(cls.expected), cls.fixed, cls.unexpected, cls.exit_code) == (1, [], [], 0), v
    assert known.classify([_rec("c-1", "CRASH")]).unexpected          # a crash is not a flake
    # without the mark, a FLAKY verdict fails the run, and a FAIL entry that now flakes is unexpected
    plain = parse_expectations({"version": 1, "expectations": [{"cases": "c-1", "verdict": "FAIL"}]})
    assert plain.classify([_rec("c-2", "FLAKY")]).unexpected
    assert plain.classify([_rec("c-1", "FLAKY")]).unexpected
    assert plain.classify([_rec("c-1", "PASS")]).fixed


def test_expectations_gate_on_findings():
    known = parse_expectations({"version": 1, "expectations": [{"cases": "c-1", "verdict": "BATCH_DEPENDENT"}]})
    assert known.classify([_rec("c-1", "PASS", "BATCH_DEPENDENT")]).expected
    assert known.classify([_rec("c-1", "PASS")]).fixed                 # the finding is gone
    assert known.classify([_rec("c-2", "PASS", "BATCH_DEPENDENT")]).unexpected
    # CPU_WRONG is not in the default: not failing, unless listed
    assert not known.classify([_rec("c-2", "PASS", "CPU_WRONG")]).unexpected
    assert known.classify([_rec("c-2", "PASS", "CPU_WRONG")], ("FAIL", "CPU_WRONG")).unexpected


def test_reports_gate_on_every_finding_and_show_flaky_cases(tmp_path):
    from onnx_dml_bench.report import junit, summary
    from onnx_dml_bench.report.data import Results
    base = dict(op="max_pooling2", dml_op="D", dtype="FLOAT32", opset=12, family="random", seed=1, descriptor={},
                ep="CPUExecutionProvider")
    recs = [CaseRecord("a", verdict="PASS", finding="EP_CPU_DIFFER",
                       labels=["finding:BATCH_DEPENDENT", "finding:EP_CPU_DIFFER"],
                       runs=Runs(batch=["FAIL", "FAIL"], alone=["PASS"], batch_size=4), **base),
            CaseRecord("b", verdict="FLAKY", reason="verdicts of 2 identical runs: PASS, FAIL",
                       runs=Runs(repeat=2, batch=["PASS", "FAIL"]), **base),
            CaseRecord("c", verdict="PASS", **base)]
    res = Results([], [], recs)
    s = summary.build(res)
    assert s["failing"] == ["a", "b"] and s["findings"] == {"BATCH_DEPENDENT": 1, "EP_CPU_DIFFER": 1}
    assert summary.build(res, ("FAIL",))["failing"] == []
    x = junit.build(res)
    cases = {tc.get("name"): tc for tc in x.iter("testcase")}
    assert cases["a"].find("failure").get("type") == "BATCH_DEPENDENT"
    assert cases["b"].find("failure").get("type") == "FLAKY"
    assert "alone: PASS" in cases["a"].find("failure").text
    x = junit.build(res, ("FAIL",))
    cases = {tc.get("name"): tc for tc in x.iter("testcase")}
    assert cases["b"].find("failure") is None and cases["b"].find("flakyFailure") is not None
    assert cases["a"].find("failure") is None


# ----------------------------------------------------------------------------------------------
# Real lanes: DirectML under Wine, the direct lane
# ----------------------------------------------------------------------------------------------

@pytest.mark.xdist_group("wine")
def test_dml_lane_repeats_in_one_session_and_confirms_alone(dml_stack, passing, monkeypatch):
    """On the DML EP under Wine: the repeats of one session come back run by run (worker.js keeps
    each run's outputs), a case wrong only shared is found batch-dependent through the lane's own
    sessions, a deterministic case stays PASS."""
    from onnx_dml_bench.lanes.dml_wine import resolve as resolve_dml
    lane = resolve_dml({})
    victim, drifting = passing[0], passing[1]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim.id: "batch", drifting.id: "drift"}))
    backend = lane.make_backend(RunConfig(repeat=2, three_way=False))
    try:
        recs = {r.case_id: r for r in run_batch(backend, passing[:4])}
    finally:
        backend.close()
    r = recs[victim.id]
    assert (r.verdict, r.finding) == ("PASS", "BATCH_DEPENDENT"), r.reason
    assert r.runs.batch == ["FAIL", "FAIL"] and r.runs.alone == ["PASS", "PASS"]
    assert recs[drifting.id].verdict == "FLAKY" and "NONDETERMINISTIC" in recs[drifting.id].findings
    for c in passing[2:4]:
        assert recs[c.id].verdict == "PASS" and recs[c.id].runs.batch == ["PASS", "PASS"], recs[c.id].reason
        assert not recs[c.id].findings and recs[c.id].runs.differ == {}


@pytest.mark.xdist_group("wine")
def test_dml_worker_returns_every_run_of_a_session(dml_stack, passing):
    from onnx_dml_bench.execute.batch import _job, prepare_case
    from onnx_dml_bench.lanes.dml_wine import resolve as resolve_dml
    backend = resolve_dml({}).make_backend(RunConfig(three_way=False))
    try:
        items = [prepare_case(c, i, "DmlExecutionProvider")[1] for i, c in enumerate(passing[:2])]
        (out,) = backend.run_many([_job(items, passing[0].opset, "ep", 3)])
    finally:
        backend.close()
    assert out.ok and len(out.runs) == 2
    for run in out.runs:
        assert set(run) == set(out.outputs)
        assert all(np.array_equal(run[k], out.outputs[k]) for k in run)


@pytest.mark.xdist_group("wine")
def test_direct_lane_repeats(dml_stack, monkeypatch):
    from onnx_dml_bench.lanes.dml_direct import resolve as resolve_direct
    cases = _mp2(3)
    monkeypatch.setenv(FAULTS_ENV, json.dumps({cases[0].id: "flaky"}))
    backend = resolve_direct({}).make_backend(RunConfig(repeat=3))
    try:
        recs = {r.case_id: r for r in run_batch(backend, cases)}
    finally:
        backend.close()
    assert recs[cases[0].id].verdict == "FLAKY" and recs[cases[0].id].runs.batch == ["PASS", "FAIL", "PASS"]
    for c in cases[1:]:
        r = recs[c.id]
        assert r.runs.batch == [r.verdict] * 3 and not r.findings and r.runs.batch_size == 1, r.reason
