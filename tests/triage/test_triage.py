"""triage: one shrunk case and one bundle per failure signature of a results file, linked from
the report."""
from __future__ import annotations

import json

import pytest

from onnx_dml_bench import casefile, registry
from onnx_dml_bench.cli import main
from onnx_dml_bench.results import read
from onnx_dml_bench.signature import Signature, signature
from onnx_dml_bench.triage.triage import groups

pytest.importorskip("onnxruntime")
MP = registry.OPERATORS["max_pooling2"]


def _failing_run(tmp_path):
    """A run of the CPU EP over default-profile MaxPool cases with NaN / signed zeros and Indices:
    some fail (ONNX Runtime's known MaxPool NaN and zero-sign behaviour), with several signatures."""
    sweep = MP.sweep("default")
    cands = [c for c in sweep if c.family == "nan" and c.desc.OutputIndicesDataType][:20] + \
        [c for c in sweep if c.family in ("negzero", "inf") and not c.desc.OutputIndicesDataType][:40]
    casefile.dump(cands, tmp_path / "c.json")
    out = tmp_path / "run"
    assert main(["run", "--ep", "cpu", "--cases", str(tmp_path / "c.json"), "--out", str(out), "--no-report"]) == 1
    return out / "results.jsonl"


def test_groups_take_the_smallest_case_of_each_signature(tmp_path):
    results = _failing_run(tmp_path)
    recs = read(results).records
    rows = groups(recs)
    sigs = {signature(r) for r in recs if r.verdict == "FAIL"}
    assert {r.signature for r in rows} == sigs and len(rows) >= 2
    assert sum(r.count for r in rows) == sum(r.verdict == "FAIL" for r in recs)
    for row in rows:
        same = [r for r in recs if signature(r) == row.signature]
        size = lambda r: __import__("math").prod(r.descriptor["InputSizes"])  # noqa: E731
        assert size(next(r for r in same if r.case_id == row.case_id)) == min(size(r) for r in same)
    assert groups(recs, ("CRASH",)) == []


def test_triage_writes_a_minimal_case_and_bundle_per_signature_and_the_report_links_them(tmp_path):
    results = _failing_run(tmp_path)
    code = main(["triage", "--from", str(results), "--time-limit", "60"])
    assert code == 0
    out = results.parent
    doc = json.loads((out / "triage.json").read_text())
    recs = read(results).records
    assert len(doc["signatures"]) == len({signature(r) for r in recs if r.verdict == "FAIL"})
    for row in doc["signatures"]:
        shrunk = out / row["shrunk"]
        minimal = casefile.load(shrunk)
        assert [c.id for c in minimal] == [row["minimal"]]
        # the minimal case still fails with the same signature when run again
        assert main(["run", "--ep", "cpu", "--cases", str(shrunk), "--out", str(tmp_path / row["minimal"]),
                     "--no-report"]) == 1
        (again,) = read(tmp_path / row["minimal"] / "results.jsonl").records
        assert signature(again) == Signature.from_dict(row["signature"])
        readme = (out / row["bundle"]).read_text()
        assert row["minimal"] in readme and f"shrunk from `{row['case']}`" in readme
        assert (out / row["bundle"]).parent.joinpath("model.onnx").is_file()
        assert (out / row["bundle"]).parent.joinpath("dxdispatch.json").is_file()
    md = (out / "triage.md").read_text()
    assert md.count("\n| ") == len(doc["signatures"]) + 2      # header, rule, one row each
    # the report links each triaged FAIL to its minimal case and bundle
    from onnx_dml_bench.report import html, load
    data = html.case_data(load([results]))
    det = {r[0]: r[data["columns"].index("detail")] for r in data["cases"]}
    for row in doc["signatures"]:
        assert det[row["case"]]["triage"]["shrunk"] == row["shrunk"]
        assert det[row["case"]]["triage"]["bundle"] == row["bundle"]


def test_triage_refuses_unknown_verdicts_and_says_when_nothing_fails(tmp_path, capsys):
    assert main(["triage", "--from", str(tmp_path / "none.jsonl"), "--verdicts", "BROKEN"]) == 2
    assert "unknown verdict" in capsys.readouterr().err
    out = tmp_path / "ok"
    assert main(["run", "--ep", "cpu", "--op", "space_to_depth1", "--profile", "smoke", "--out", str(out),
                 "--no-report"]) == 0
    assert main(["triage", "--from", str(out / "results.jsonl")]) == 0
    assert "nothing to triage" in capsys.readouterr().err
    assert main(["triage", "--from", str(tmp_path / "missing.jsonl")]) == 2


def test_shrink_picks_keeps_to_its_budget_and_bundles_what_it_shrank(tmp_path):
    """The main job's shrinking: the chosen cases shrunk and bundled beside the results within the
    budget; with a budget too small for a shrink, none is started and each row says why."""
    import time

    from onnx_dml_bench.triage.triage import shrink_picks
    results = _failing_run(tmp_path)
    rows = groups(read(results).records)[:3]
    picks = [(r.case_id, "CPUExecutionProvider", r.signature, r.count) for r in rows]
    t = time.monotonic()
    got = shrink_picks(results, picks, budget=30, say=lambda _m: None)
    took = time.monotonic() - t
    assert took < 30 + 10, took                      # a round in flight may end past it, not far
    done = [r for r in got if r.shrunk is not None]
    assert done, [r.error for r in got]
    for r in done:
        assert (results.parent / r.files["shrunk"]).is_file()
        bundle = results.parent / r.files["bundle"]
        assert (bundle / "repro.py").is_file() and (bundle / "descriptor.cpp").is_file()
        assert r.shrunk.signature == r.signature
    for r in got:
        assert r.shrunk is not None or r.error.startswith("not shrunk: ")
    none = shrink_picks(results, picks, budget=1, say=lambda _m: None)
    assert all(r.shrunk is None and "time budget was spent" in r.error for r in none)
