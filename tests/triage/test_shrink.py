"""Shrinking keeps the failure's signature: a planted tie-order fault, real CPU EP failures, and
the written case file reproducing through `run --cases`."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from onnx_dml_bench import casefile
from onnx_dml_bench.cases import Case
from onnx_dml_bench.execute import RunConfig
from onnx_dml_bench.ops.max_pooling2 import OP as MP
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.lanes.ort import OrtBackend
from onnx_dml_bench.outdir import bundle_path, shrunk_path
from onnx_dml_bench.triage.prober import Prober
from onnx_dml_bench.triage.shrink import background, describe, shrink, state_of, with_values
from onnx_dml_bench.triage.triage import ShrinkError, write_case
from onnx_dml_bench.signature import signature

MARK = 7.0


def _last_tie_indices(x: np.ndarray, node: onnx.NodeProto, idx: np.ndarray) -> np.ndarray:
    """The planted fault: where a window's maximum is MARK and occurs more than once, the index of
    its LAST occurrence (the DML rule wants the first)."""
    a = {at.name: list(onnx.helper.get_attribute_value(at)) for at in node.attribute if at.name != "auto_pad"}
    kh, kw = a["kernel_shape"]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    pt, pl = a.get("pads", [0, 0, 0, 0])[:2]
    n, c, h, w = x.shape
    out = idx.copy()
    for b in range(n):
        for ch in range(c):
            for oy in range(idx.shape[2]):
                for ox in range(idx.shape[3]):
                    cells = [(oy * sh - pt + i * dh, ox * sw - pl + j * dw) for i in range(kh) for j in range(kw)]
                    cells = [(y, z) for y, z in cells if 0 <= y < h and 0 <= z < w]
                    vals = [x[b, ch, y, z] for y, z in cells]
                    if max(vals) == MARK and vals.count(MARK) > 1:
                        y, z = [cz for cz, v in zip(cells, vals) if v == MARK][-1]
                        out[b, ch, oy, ox] = ((b * c + ch) * h + y) * w + z
    return out


class TieFaultBackend(OrtBackend):
    """ONNX Runtime's CPU EP seen as an EP with a planted tie-order fault on its 'ep' side."""

    def run(self, model, feeds, output_names, side):
        out = super().run(model, feeds, output_names, side)
        if side != "ep" or not out.ok:
            return out
        graph = onnx.load_from_string(model).graph
        for node in graph.node:
            if node.op_type == "MaxPool" and len(node.output) == 2 and node.output[1] in out.outputs:
                out.outputs[node.output[1]] = _last_tie_indices(feeds[node.input[0]], node, out.outputs[node.output[1]])
        return out


def _tie_case() -> Case:
    d = MP.Desc(InputSizes=(2, 3, 9, 9), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(3, 3),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(2, 2), OutputIndicesDataType="UINT32")
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, size=d.InputSizes).astype(np.float32)
    x[1, 2, 4, 3] = MARK
    x[1, 2, 4, 5] = MARK          # same dilated window row: a tie at the maximum
    return with_values(Case(MP, d, 12), {"X": x})


def test_planted_tie_fault_shrinks_to_the_two_tied_elements():
    case = _tie_case()
    backend = TieFaultBackend(resolve("cpu"), RunConfig())
    probe = Prober(backend=backend)
    first = probe([case])[case.id]
    sig = signature(first)
    assert sig is not None and sig.verdict == "FAIL" and sig.outputs == ("Indices",) and "tie-order" in sig.labels
    res = shrink(case, probe)
    assert res.signature == sig
    assert signature(res.record) == sig
    again = probe([res.minimal])[res.minimal.id]
    assert signature(again) == sig
    x = res.minimal.inputs()["X"]
    st = state_of(res.minimal)
    assert st.non_neutral() == 2, (describe(res.minimal), x)
    kept = x[~st.neutral["X"]]
    assert list(kept) == [MARK, MARK]
    assert x.size < 2 * 3 * 9 * 9 and x.size <= 6
    assert res.non_neutral_before == 2 * 3 * 9 * 9 and res.non_neutral_after == 2
    assert "2x3x9x9 k3 s1 d2" in res.summary() and "486 -> 2 non-neutral elements" in res.summary()
    # the reference backend (no fault) passes the minimal case: the fault, not the case, fails
    plain = Prober(backend=resolve("cpu").make_backend(RunConfig()))
    assert plain([res.minimal])[res.minimal.id].verdict == "PASS"


def test_background_is_distinct_and_below_the_data():
    bg = background((1, 1, 3, 4), "FLOAT32")
    assert len(set(bg.reshape(-1).tolist())) == 12 and bg.max() == -1
    assert background((5,), "UINT8").tolist() == [0, 1, 2, 3, 4]
    assert background((3,), "INT8").tolist() == [-1, -2, -3]


def _cpu_failure(families=("negzero", "nan")):
    """A real failure of ONNX Runtime's CPU EP among the default profile's MaxPool cases."""
    cands = [c for c in MP.sweep("default") if c.family in families and c.desc.OutputIndicesDataType]
    probe = Prober(backend=resolve("cpu").make_backend(RunConfig()))
    recs = probe(cands[:60])
    fails = [c for c in cands[:60] if recs[c.id].verdict == "FAIL"]
    assert fails, "no CPU EP failure among the chosen default-profile cases"
    return fails[0], recs[fails[0].id], probe


def test_real_cpu_failure_shrinks_smaller_with_the_same_signature():
    case, rec, probe = _cpu_failure()
    sig = signature(rec)
    res = shrink(case, probe)
    assert res.signature == sig and signature(res.record) == sig
    assert res.elements_after < res.elements_before
    assert res.non_neutral_after < res.non_neutral_before
    assert res.minimal.family == "explicit"
    # deterministic, and counted per shrink (not over the prober's life)
    again = shrink(case, probe)
    assert again.minimal.id == res.minimal.id and again.probes == res.probes > 0


def test_written_case_file_reproduces_with_run_cases(tmp_path):
    from onnx_dml_bench.cli import main
    from onnx_dml_bench.results import read
    case, rec, probe = _cpu_failure()
    res = shrink(case, probe)
    path = write_case(res, tmp_path / "min.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == "onnx-dml-bench/cases/1" and doc["shrunk"]["from"] == case.id
    loaded = casefile.load(path)
    assert [c.id for c in loaded] == [res.minimal.id]
    code = main(["run", "--ep", "cpu", "--cases", str(path), "--out", str(tmp_path / "run"), "--no-report"])
    assert code == 1
    (r,) = read(tmp_path / "run" / "results.jsonl").records
    assert r.case_id == res.minimal.id and signature(r) == res.signature


def test_shrink_command_refuses_a_pass_and_an_unknown_case(tmp_path):
    from onnx_dml_bench.cli import main
    code = main(["run", "--ep", "cpu", "--op", "space_to_depth1", "--profile", "smoke", "--out", str(tmp_path),
                 "--no-report"])
    assert code == 0
    from onnx_dml_bench.results import read
    from onnx_dml_bench.triage.triage import shrink_command
    results = tmp_path / "results.jsonl"
    rec = read(results).records[0]
    with pytest.raises(ShrinkError, match="not a failure"):
        shrink_command(rec.case_id, results, None, None, None, 10, print)
    with pytest.raises(ShrinkError, match="no record"):
        shrink_command("nope", results, None, None, None, 10, print)
    assert shrunk_path(results, "x") == tmp_path / "shrunk" / "x.json"


def test_report_and_junit_link_a_fail_to_its_shrunk_case(tmp_path):
    import xml.etree.ElementTree as ET

    from onnx_dml_bench.cli import main
    from onnx_dml_bench.report import html, load, write_all
    from onnx_dml_bench.triage.triage import shrink_command
    case, rec, probe = _cpu_failure()
    casefile.dump([case], tmp_path / "c.json")
    out = tmp_path / "run"
    assert main(["run", "--ep", "cpu", "--cases", str(tmp_path / "c.json"), "--out", str(out), "--no-report"]) == 1
    results = out / "results.jsonl"
    res, path = shrink_command(case.id, results, None, None, None, 120, lambda m: None)
    assert path == shrunk_path(results, case.id) and path.is_file()
    write_all([results], out)
    junit = ET.parse(out / "junit.xml").getroot()
    (failure,) = junit.iter("failure")
    assert f"shrunk case: {path}" in failure.text and f"onnx-dml-bench bundle {case.id}" in failure.text
    data = html.case_data(load([results]))
    (row,) = [r for r in data["cases"] if r[0] == case.id]
    detail = row[data["columns"].index("detail")]
    assert detail["triage"]["shrunk"] == f"shrunk/{case.id}.json"
    assert "bundle" not in detail["triage"] and detail["triage"]["cmd"].startswith("onnx-dml-bench bundle")
    # a bundle beside the results is linked instead of the command
    from onnx_dml_bench.triage.triage import bundle_command
    bundle_command(case.id, results, bundle_path(results, case.id), None, rerun=False, say=lambda m: None)
    data = html.case_data(load([results]))
    (row,) = [r for r in data["cases"] if r[0] == case.id]
    assert row[data["columns"].index("detail")]["triage"]["bundle"] == f"bundle/{case.id}/README.md"


def test_a_3d_case_with_an_inert_axis_gets_a_2d_candidate():
    from onnx_dml_bench.triage.shrink import structure_candidates
    d = MP.Desc(InputSizes=(1, 1, 1, 2, 3), DataType="FLOAT32", DimensionCount=3, Strides=(4, 1, 1),
                WindowSize=(1, 2, 2), StartPadding=(0, 0, 1), EndPadding=(0, 1, 0), Dilations=(3, 1, 1))
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 1, 2, 3)
    st = state_of(with_values(Case(MP, d, 12), {"X": x}))
    two = [c for c in structure_candidates(st) if c.case.desc.DimensionCount == 2]
    assert len(two) == 1
    c = two[0].case
    assert c.desc.InputSizes == (1, 1, 2, 3) and c.desc.WindowSize == (2, 2) and c.desc.Strides == (1, 1)
    assert c.desc.StartPadding == (0, 1) and c.desc.EndPadding == (1, 0) and c.desc.Dilations == (1, 1)
    assert np.array_equal(c.inputs()["X"], x.reshape(1, 1, 2, 3))
    # same answer: the dropped axis took no part
    assert np.array_equal(MP.reference(c, c.inputs())["Y"].reshape(-1), MP.reference(st.case, st.arrays)["Y"].reshape(-1))


def test_shrunk_roi_cases_keep_the_pages_preconditions_on_the_rois():
    """ROITensor rows are [BatchID, x1, y1, x2, y2] with a batch of the input and x2 >= x1,
    y2 >= y1 (DML_ROI_POOLING_OPERATOR_DESC): candidates that break them are never probed, a case
    file that breaks them is an ERROR naming the row, and the reference refuses them."""
    from onnx_dml_bench.execute import run_batch
    from onnx_dml_bench import registry
    from onnx_dml_bench.triage.shrink import _data_ok, state_of, with_values
    roi = registry.get("roi_pooling")
    case = next(c for c in roi.sweep("default") if c.family == "random" and c.desc.InputSizes[0] == 2)
    inputs = case.inputs()
    assert roi.input_problem(case, inputs) is None
    for row, why in (([-1, 0, 0, 1, 1], "batch index -1"), ([2, 0, 0, 1, 1], "batch index 2"),
                     ([0.5, 0, 0, 1, 1], "batch index 0.5"), ([0, 3, 1, -4, -5], "break x2 >= x1")):
        bad = dict(inputs, rois=inputs["rois"].copy())
        bad["rois"][0] = row
        bad_case = with_values(case, bad)
        assert why in roi.input_problem(bad_case, bad_case.inputs())
        assert not _data_ok(bad_case)
        with pytest.raises(ValueError, match="invalid rois"):
            roi.reference(bad_case, bad_case.inputs())
        (rec,) = run_batch(resolve("cpu").make_backend(RunConfig()), [bad_case])
        assert rec.verdict == "ERROR" and why in rec.reason
    # the background the shrinker gives neutral elements (-1, -2, ...) is not a valid ROI row:
    # the neutral candidate of the rois is not probed
    st = state_of(case)
    from onnx_dml_bench.triage.shrink import _keep_only
    assert not _data_ok(_keep_only(st, {("X", 0)}).case)
