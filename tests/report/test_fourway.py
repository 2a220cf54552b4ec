"""Four-way attribution (report/fourway.py) over hand-made records of the dml and dml-direct lanes."""
from __future__ import annotations

import json

import pytest

from onnx_dml_bench import results as R
from onnx_dml_bench.record import CaseRecord, CpuSide, Environment, OutputStats
from onnx_dml_bench.report import fourway as F


def out(match: bool, got=1.0, n=1) -> dict[str, OutputStats]:
    first = [] if match else [{"index": [0, 0, 0, 0], "got": got, "ref": 2.0}]
    return {"Y": OutputStats("Y", "exact", match, 4, 0 if match else n, first=first)}


def rec(ep: str, verdict: str, *, case="c1", attribution=None, cpu=None, got=1.0, n=1, points=()) -> CaseRecord:
    r = CaseRecord(case_id=case, op="max_pooling2", dml_op="DML_MAX_POOLING2_OPERATOR_DESC", dtype="FLOAT32",
                   opset=12, family="random", seed=1, descriptor={}, ep=ep, verdict=verdict, attribution=attribution,
                   open_points=list(points))
    if verdict in ("PASS", "FAIL"):
        r.outputs = out(verdict == "PASS" or attribution == "CPU_WRONG", got, n)
    if cpu:
        r.cpu = CpuSide(build="cpu", verdict=cpu, outputs=out(cpu == "PASS", got, n) if cpu in ("PASS", "FAIL") else {})
    return r


def direct(verdict, **kw):
    return rec(F.DIRECT_EP, verdict, **kw)


def dml(verdict, **kw):
    return rec(F.DML_EP, verdict, **kw)


@pytest.mark.parametrize("d, e, cls", [
    (direct("PASS"), dml("PASS", cpu="PASS"), "ALL_AGREE"),
    (direct("PASS"), dml("PASS", attribution="CPU_WRONG", cpu="FAIL"), "CPU_EP_WRONG"),
    (direct("PASS"), dml("FAIL", attribution="EP_WRONG", cpu="PASS"), "EP_LOWERING_WRONG"),
    (direct("FAIL"), dml("FAIL", attribution="EP_WRONG", cpu="PASS"), "DIRECTML_WRONG"),
    (direct("FAIL"), dml("FAIL", attribution="EP_WRONG", got=7.0), "DIRECTML_AND_EP_WRONG"),
    (direct("FAIL"), dml("PASS", cpu="PASS"), "DIRECTML_WRONG_EP_RIGHT"),
    (direct("FAIL"), dml("NOT_EXPRESSIBLE"), "DIRECTML_WRONG"),
    (direct("FAIL"), None, "DIRECTML_WRONG"),
    (direct("PASS"), dml("EP_REJECTED"), "EP_NOT_COMPARED"),
    (direct("NOT_SUPPORTED"), dml("PASS"), "DIRECT_NOT_COMPARED"),
    (direct("ERROR"), dml("CRASH"), "NEITHER_COMPARED"),
    (direct("FAIL", points=("nan",)), dml("FAIL", attribution="REFERENCE_DISPUTED", cpu="FAIL"), "REFERENCE_DISPUTED"),
    (direct("PASS"), dml("FAIL", attribution="REFERENCE_DISPUTED", points=("nan",), cpu="FAIL"), "REFERENCE_DISPUTED"),
    # DirectML and the CPU EP fail the same way on an open point: two implementations against the reference
    (direct("FAIL", points=("nan",)), dml("FAIL", attribution="BOTH_WRONG", points=("nan",), cpu="FAIL"),
     "REFERENCE_DISPUTED"),
    # DirectML agreeing with the DML EP is no evidence (the EP runs DirectML): DirectML is wrong
    (direct("FAIL", points=("nan",)), dml("FAIL", attribution="EP_WRONG", points=("nan",), cpu="PASS"), "DIRECTML_WRONG"),
    # an EP outside every allowed answer of an open point, DirectML and the CPU EP right: the lowering
    (direct("PASS"), dml("FAIL", attribution="EP_WRONG", points=("ceil-divisor",), cpu="PASS"), "EP_LOWERING_WRONG"),
])
def test_classify(d, e, cls):
    fw = F.classify(d, e)
    assert fw.cls == cls, fw
    assert fw.cls in F.CLASSES and cls in fw.line()


def test_open_points_are_noted():
    fw = F.classify(direct("FAIL", points=("nan",)), dml("FAIL", attribution="EP_WRONG", cpu="PASS"))
    assert fw.cls == "DIRECTML_WRONG" and "open point(s) nan" in fw.note


def test_cpu_wrong_is_noted_beside_another_class():
    fw = F.classify(direct("PASS"), dml("FAIL", attribution="BOTH_WRONG", cpu="FAIL"))
    assert fw.cls == "EP_LOWERING_WRONG" and "CPU EP differs" in fw.note


def test_join_needs_both_lanes_and_counts_unpaired_cases():
    recs = [direct("PASS", case="a"), dml("PASS", case="a", cpu="PASS"),
            direct("FAIL", case="b"), dml("PASS", case="b"),
            direct("PASS", case="only-direct"), dml("PASS", case="only-ep")]
    view = F.join(recs)
    assert view["counts"] == {"ALL_AGREE": 1, "DIRECTML_WRONG_EP_RIGHT": 1}
    assert view["direct_only"] == 1 and view["ep_only"] == 1
    assert view["matrix"] == [{"op": "max_pooling2", "dtype": "FLOAT32", "total": 2,
                               "counts": {"ALL_AGREE": 1, "DIRECTML_WRONG_EP_RIGHT": 1}}]
    s = F.summary(view)
    assert [c["case_id"] for c in s["cases"]] == ["b"]
    json.dumps(s)
    assert F.lines(view)["b"].startswith("four-way: DIRECTML_WRONG_EP_RIGHT")
    assert F.join([r for r in recs if r.ep == F.DML_EP]) is None
    assert F.summary(None) is None and F.lines(None) == {}


def test_report_shows_the_four_way_view(tmp_path):
    from onnx_dml_bench.report import write_all
    paths = []
    for ep, recs in ((F.DML_EP, [dml("PASS", case="a", cpu="PASS"), dml("FAIL", case="b", attribution="EP_WRONG")]),
                     (F.DIRECT_EP, [direct("PASS", case="a"), direct("PASS", case="b")])):
        p = tmp_path / f"{ep}.jsonl"
        w = R.ResultWriter(p, Environment(ep=ep, env_id=ep))
        w.write([r for r in recs])
        w.close()
        paths.append(p)
    write_all(paths, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["fourway"]["counts"] == {"ALL_AGREE": 1, "EP_LOWERING_WRONG": 1}
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Four-way attribution" in html and "EP_LOWERING_WRONG" in html
    from onnx_dml_bench.report import html as H
    embedded = html if "four-way: " in html else json.dumps(H.embedded_data(html))   # case data may be packed
    assert "four-way: EP_LOWERING_WRONG" in embedded
