"""Who is at fault (report/fault.py), the labels' legend (report/data.py), the value grids of a
small case (report/grids.py) and the triage links of a signature's records (outdir.py)."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import case_from_record
from onnx_dml_bench.cli import main
from onnx_dml_bench.outdir import triage_links
from onnx_dml_bench.record import CaseRecord, CpuSide
from onnx_dml_bench.report import data as D
from onnx_dml_bench.report import fault as FT
from onnx_dml_bench.report import grids as G
from onnx_dml_bench.report.html import case_data, render
from onnx_dml_bench.results import read

ROOT = Path(__file__).resolve().parents[2]
FOURWAY = ROOT / "reports" / "dml-lavapipe-fourway" / "results.jsonl.xz"


def rec(case_id="c1", ep="DmlExecutionProvider", verdict="FAIL", attribution="EP_WRONG", labels=(), cpu=None,
        finding=None, op="max_pooling2"):
    return CaseRecord(case_id, op, "DML_MAX_POOLING2_OPERATOR_DESC", "FLOAT32", 12, "random", 1, {}, ep, verdict,
                      attribution=attribution, labels=list(labels), cpu=cpu, finding=finding)


def fail_side(labels=()):
    return CpuSide("onnxruntime 1.32.0", "FAIL", "Y: 1/4 differ")


def test_blame_of_each_kind_of_record():
    assert FT.blame(rec(ep="DirectML")).parties == ("directml",)
    assert FT.blame(rec(), "DIRECTML_WRONG").parties == ("directml",)
    assert FT.blame(rec(), "DIRECTML_AND_EP_WRONG").parties == ("directml", "lowering")
    assert FT.blame(rec(), "EP_LOWERING_WRONG").parties == ("lowering",)
    assert FT.blame(rec()).parties == ("dml-ep",)                        # no direct-lane record
    assert FT.blame(rec(ep="CUDAExecutionProvider")).parties == ("ep:CUDAExecutionProvider",)
    # the CPU EP: as the EP under test, or as the second side; known deviations apart
    assert FT.blame(rec(ep="CPUExecutionProvider")).parties == ("cpu",)
    known = rec(ep="CPUExecutionProvider", labels=["known-deviation:ort-maxpool-nan"])
    assert FT.blame(known).parties == ("cpu-known",) and FT.blame(known).known == ("ort-maxpool-nan",)
    both = rec(attribution="BOTH_WRONG", cpu=fail_side(), labels=["known-deviation:ort-maxpool-nan"])
    assert FT.blame(both, "EP_LOWERING_WRONG").parties == ("lowering", "cpu-known")
    cpu_wrong = rec(verdict="PASS", attribution="CPU_WRONG", cpu=fail_side(), finding="CPU_WRONG")
    assert FT.blame(cpu_wrong).parties == ("cpu",)
    assert FT.blame(rec(attribution="REFERENCE_DISPUTED", cpu=fail_side())).parties == ("reference",)
    assert FT.blame(rec(ep="DirectML"), "REFERENCE_DISPUTED").parties == ("reference",)
    # no answer, not run, nothing wrong
    assert FT.blame(rec(verdict="CRASH", attribution=None)).parties == ("no-answer",)
    assert FT.blame(rec(verdict="EP_REJECTED", attribution=None)).parties == ("not-run",)
    assert FT.blame(rec(verdict="ERROR", attribution=None, ep="CPUExecutionProvider",
                        labels=["known-deviation:ort-avgpool-same-negative-pad"])).parties == ("cpu-known",)
    assert FT.blame(rec(verdict="PASS", attribution=None)).parties == ()
    # the CPU EP's lane beside other EPs under test: its refusals and errors are its own, never the
    # EPs under test's "no answer" / "not run"; a known deviation that explains a refusal says so
    cpu_refused = rec(verdict="EP_REJECTED", attribution=None, ep="CPUExecutionProvider")
    assert FT.blame(cpu_refused).parties == ("not-run",)                     # the only lane: the EP under test
    assert FT.blame(cpu_refused, cpu_apart=True).parties == ("cpu-no-answer",)
    assert FT.blame(rec(verdict="EP_ERROR", attribution=None, ep="CPUExecutionProvider"), cpu_apart=True).parties == ("cpu-no-answer",)
    for v in ("EP_REJECTED", "EP_ERROR"):
        known_refusal = rec(verdict=v, attribution=None, ep="CPUExecutionProvider",
                            labels=["known-deviation:ort-avgpool-same-negative-pad"])
        assert FT.blame(known_refusal).parties == FT.blame(known_refusal, cpu_apart=True).parties == ("cpu-known",)
    assert FT.blame(rec(verdict="CRASH", attribution=None, ep="CPUExecutionProvider",
                        labels=["known-deviation:ort-avgpool-same-negative-pad"])).parties == ("no-answer",)
    assert FT.blame(rec(verdict="EP_REJECTED", attribution=None), cpu_apart=True).parties == ("not-run",)


def test_the_cpu_lane_beside_directml_is_counted_apart():
    """A case DirectML ran that only the CPU EP's lane refused is no "not run by the EP" of the
    DirectML first screen (the depth_to_space1 cases of the main job), nor an error of the CPU EP
    "no answer"; each column says the lanes it counts."""
    recs = [rec("a", ep="DirectML", verdict="PASS", attribution=None, op="depth_to_space1"),
            rec("a", ep="CPUExecutionProvider", verdict="EP_REJECTED", attribution=None, op="depth_to_space1"),
            rec("b", ep="DirectML", verdict="PASS", attribution=None),
            rec("b", ep="CPUExecutionProvider", verdict="EP_ERROR", attribution=None,
                labels=["known-deviation:ort-avgpool-same-negative-pad"]),
            rec("c", ep="DirectML", verdict="EP_REJECTED", attribution=None)]
    s = FT.summary(recs)
    assert s["totals"]["not-run"] == 1 and s["totals"].get("no-answer", 0) == 0       # case c, DirectML's own
    assert s["totals"]["cpu-no-answer"] == 1 and s["totals"]["cpu-known"] == 1
    assert s["known"][0]["refused"] == 1 and s["known"][0]["wrong"] == 0
    lanes = {p["key"]: p["lanes"] for p in s["parties"]}
    assert lanes["not-run"] == ["DirectML (direct)"] and lanes["cpu-no-answer"] == ["CPU EP"]


def test_summary_counts_cases_once_per_party():
    recs = [rec("a", ep="DirectML"), rec("a"), rec("b", ep="DirectML", verdict="PASS", attribution=None), rec("b"),
            rec("c", ep="CPUExecutionProvider", labels=["known-deviation:ort-maxpool-nan"]),
            rec("d", ep="CPUExecutionProvider")]
    s = FT.summary(recs)
    assert s["totals"]["directml"] == 1            # case a, on both lanes, once
    assert s["totals"]["lowering"] == 1            # case b: DirectML right, the EP wrong
    assert s["totals"]["cpu-known"] == 1 and s["totals"]["cpu"] == 1
    assert s["known"] == [{"key": "ort-maxpool-nan", "ops": ["max_pooling2"], "wrong": 1, "refused": 0}]
    assert [p["key"] for p in s["parties"]][:2] == ["directml", "lowering"]
    lines = FT.headline(s)
    assert lines[0].startswith("DirectML itself: 1 case (max_pooling2 1); DML EP lowering: 1 case")
    assert "1 case where a known deviation" in lines[1]


def test_a_cpu_only_run_asks_about_the_ep_under_test():
    s = FT.summary([rec("c", ep="CPUExecutionProvider", labels=["known-deviation:ort-maxpool-nan"])])
    assert not s["directml"] and "directml" not in [p["key"] for p in s["parties"]]


def test_known_deviation_and_open_point_texts_are_the_declarations():
    recs = read(FOURWAY).records
    legend = D.label_legend(recs)
    devs = {d.key: (op.key, d) for op in registry.OPERATORS.values() for d in op.deviations()}
    n_known = n_open = 0
    for lab, info in legend.items():
        kind, _, key = lab.partition(":")
        if kind == "known-deviation":
            op, d = devs[key]
            assert info["group"] == "known-deviation" and info["texts"][op].startswith(d.summary)
            n_known += 1
        elif kind == "open-point":
            assert info["group"] == "open-point" and info["texts"]
            for op, text in info["texts"].items():
                assert text == registry.get(op).open_point_texts[key]
            n_open += 1
        elif kind == "rule":
            assert info["group"] == "rule" and info["texts"]
            for op, text in info["texts"].items():
                assert text == registry.get(op).open_point_texts[key]
        elif kind in ("ep-took", "cpu-took"):
            assert info["group"] == "took" and key in info["texts"][""]
        else:
            assert info["group"] in ("finding", "difference", "lane", "other")
    assert n_known >= 5 and n_open >= 5      # known deviations of the CPU side are labels of that side
    assert sum(info["count"] for info in legend.values()) == sum(len(r.labels) for r in recs)


def test_triage_links_every_record_of_a_signature(tmp_path):
    a, b, c = rec("a"), rec("b"), rec("c", attribution="BOTH_WRONG")
    (tmp_path / "shrunk").mkdir()
    (tmp_path / "shrunk" / "a.json").write_text("{}")
    links = triage_links([tmp_path / "results.jsonl"], [a, b, c])
    assert links["a"]["shrunk"] == "shrunk/a.json" and "of" not in links["a"]
    assert links["b"] == {"shrunk": "shrunk/a.json", "of": "a",
                          "cmd": "onnx-dml-bench bundle b --from results.jsonl --out bundle/b"}
    assert "shrunk" not in links["c"]           # another signature: no link of its own


@pytest.fixture(scope="module")
def cpu_default_fails(tmp_path_factory):
    """Records of the CPU EP whose outputs are wrong (known deviations of the default profile)."""
    from onnx_dml_bench.casefile import dump
    from onnx_dml_bench.plan import select_cases
    cases = [c for c in select_cases("default", ["max_pooling2", "roi_pooling"], ["f32"], "default", None)
             if c.family in ("nan", "inf")]
    out = tmp_path_factory.mktemp("cpu")
    dump(cases, out / "cases.json")
    assert main(["run", "--ep", "cpu", "--cases", str(out / "cases.json"), "--out", str(out / "r"), "--no-report"]) in (0, 1)
    return [r for r in read(out / "r" / "results.jsonl").records if r.verdict == "FAIL"]


def test_value_grid_is_the_ep_output_itself(cpu_default_fails):
    """The grid rebuilt from a record (reference + recorded mismatches) equals the output the EP
    really gave, run again here: for the CPU EP, ONNX Runtime itself."""
    import onnxruntime as ort
    from onnx_dml_bench.ops.base import make_model
    checked = 0
    for r in cpu_default_fails:
        g = G.grid(r)
        if g is None:
            continue
        case = case_from_record(r)
        inputs = case.inputs()
        frag = case.operator.build(case, "")
        model = make_model([frag], case.opset, name=case.id)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        got_all = sess.run([frag.output_names[g["output"]]], {frag.input_names[k]: v for k, v in inputs.items()})
        out = got_all[0]
        sl = out[tuple(g["lead"])] if g["lead"] else out
        sl = sl.reshape(1, -1) if sl.ndim == 1 else sl
        rows, cols = len(g["ep"]), len(g["ep"][0])
        want = sl[g["r0"]:g["r0"] + rows, g["c0"]:g["c0"] + cols].astype(np.float64)
        got = np.array([[float(v) if not isinstance(v, str) else float(v) for v in row] for row in g["ep"]])
        assert np.array_equal(np.nan_to_num(got, nan=1234.5), np.nan_to_num(want, nan=1234.5)), r.case_id
        assert g["bad"], r.case_id
        checked += 1
    assert checked >= 3


def test_no_grid_where_the_record_does_not_list_every_mismatch(cpu_default_fails):
    r = copy.deepcopy(next(r for r in cpu_default_fails if G.grid(r) is not None))
    out = next(o for o in r.outputs.values() if not o.match)
    out.first = [dict(out.first[0]) for _ in range(G.MAX_FIRST)]     # a cut list in one slice
    assert G.grid(r) is None
    r2 = copy.deepcopy(next(r for r in cpu_default_fails if G.grid(r) is not None))
    o2 = next(o for o in r2.outputs.values() if not o.match)
    o2.first[0]["ref"] = 4242.0                                        # not this reference's value
    assert G.grid(r2) is None


def test_page_data_carries_parties_and_fourway_classes():
    from onnx_dml_bench.report.data import load
    res = load([FOURWAY])
    data = case_data(res)
    cols, t = data["columns"], data["tables"]
    parties = {t["party"][i] for row in data["cases"] for i in row[cols.index("parties")]}
    assert {"directml", "lowering", "cpu-known", "not-run"} <= parties
    fw = {t["fw"][row[cols.index("fw")]] for row in data["cases"]}
    assert {"DIRECTML_WRONG", "EP_LOWERING_WRONG", "ALL_AGREE"} <= fw
    html = render(res)
    assert html.index('id="fault"') < html.index('id="summary"') < html.index('id="fourway"')


def test_pages_show_no_path_of_the_machine_that_ran(tmp_path):
    """Environment values naming the home or a temporary folder of the machine that ran (the
    command line's --out, a DLL's path) are shortened on the pages; the results keep them."""
    import lzma
    import json
    from onnx_dml_bench.report.diff import compare_command
    lines = lzma.decompress((ROOT / "reports" / "dml-lavapipe" / "results.jsonl.xz").read_bytes()).decode().splitlines()
    env = json.loads(lines[0])
    env["argv"] = ["run", "--ep", "dml", "--out", "/tmp/pytest-77/run-3"]
    env["dll_path"] = "/home/someone/.cache/onnx-dml-bench/dml/DirectML.dll"
    src = tmp_path / "results.jsonl"
    src.write_text("\n".join([json.dumps(env)] + lines[1:300]) + "\n")
    from onnx_dml_bench.report import write_all
    write_all([src], tmp_path / "r")
    page = (tmp_path / "r" / "report.html").read_text()
    assert "/tmp/" not in page and "/home/" not in page and "…/run-3" in page and "~/.cache/onnx-dml-bench" in page
    assert compare_command(src, src, tmp_path / "c" / "compare.html") == 4     # 299 records of a run: incomplete
    page = (tmp_path / "c" / "compare.html").read_text()
    assert "/tmp/" not in page and "/home/" not in page and str(tmp_path) not in page


ROI_HUGE = Path(__file__).parent / "data" / "roi-align-huge-roi.jsonl"


def test_the_grid_of_a_roi_align_case_takes_its_batch_from_batch_indices():
    """A RoiAlign ROI far outside the image (the full profile's `roi-huge` family, x1 = -336): the
    input's slice is the batch of ``batch_indices``, never the ROI's first coordinate read as a batch
    (which crashed the report of the full profile with an IndexError)."""
    (r,) = read(ROI_HUGE).records
    g = G.grid(r)
    assert g is not None and g["input"] is not None
    case = case_from_record(r)
    batch = int(case.inputs()["batch_indices"][g["lead"][0]])
    assert g["input"]["lead"][0] == batch and g["input"]["roi"][0] < -300
    assert list(G.grids([r])) == [(r.case_id, r.ep, r.env_id or "")]


def test_the_grid_refuses_a_batch_the_input_has_not():
    x = np.zeros((2, 1, 4, 4), np.float32)
    for batches in ([-336], [2], [np.nan]):
        rois = np.zeros((1, 5), np.float32)
        rois[0, 0] = batches[0]
        assert G._input_slice({"X": x, "rois": rois}, (0, 0), (1, 1, 2, 2), (0, 0, 2, 2)) is None
        assert G._input_slice({"X": x, "rois": rois[:, 1:], "batch_indices": np.array(batches)}, (0, 0),
                              (1, 1, 2, 2), (0, 0, 2, 2)) is None
    rois[0, 0] = 1
    assert G._input_slice({"X": x, "rois": rois}, (0, 0), (1, 1, 2, 2), (0, 0, 2, 2))["lead"] == [1, 0]


def test_report_of_the_full_profile_roi_case(tmp_path, capsys):
    code = main(["report", str(ROI_HUGE), "--out", str(tmp_path)])
    assert code == 0 and "Traceback" not in capsys.readouterr().err
    assert (tmp_path / "report.html").exists() and (tmp_path / "junit.xml").exists()
