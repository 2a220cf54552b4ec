"""Fixture export: layout, determinism, metadata, safe loading, and a run through ONNX's own
backend test machinery (onnx.backend.test loader + Runner) with onnxruntime.backend."""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import unittest
from pathlib import Path

import numpy as np
import onnx

from onnx_dml_bench.ops import space_depth as SD
import pytest
from onnx import TensorProto, numpy_helper

from onnx_dml_bench import fixtures as F
from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant

from conftest import ORT_LOADS_OPSET_28, ORT_MAX_OPSET

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore:onnx.version is deprecated:DeprecationWarning")
ort.set_default_logger_severity(3)

MODELS = Path(__file__).resolve().parent.parent / "models"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _meta(case_dir: Path) -> dict:
    return json.loads((case_dir / "case.json").read_text())


@pytest.fixture(scope="module")
def curated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fx") / "curated"
    F.regenerate_curated(out)
    return out


def _case_dir(root: Path, pred) -> Path:
    hits = [root / e["path"] for e in json.loads((root / "index.json").read_text())["cases"] if pred(e)]
    assert hits, "no exported case matches"
    return hits[0]


# ---------------------------------------------------------------------------------------------
# Layout, metadata and index
# ---------------------------------------------------------------------------------------------

def test_layout_matches_the_onnx_backend_test_layout(curated):
    index = json.loads((curated / "index.json").read_text())
    assert index["schema_version"] == F.SCHEMA_VERSION
    listed = {e["path"] for e in index["cases"]}
    assert listed == {p.name for p in curated.iterdir() if p.is_dir()}
    for e in index["cases"]:
        d = curated / e["path"]
        model = onnx.load(str(d / "model.onnx"))
        onnx.checker.check_model(model)
        ds = d / "test_data_set_0"
        assert sorted(p.name for p in ds.glob("input_*.pb")) == [f"input_{k}.pb" for k in range(len(model.graph.input))]
        assert sorted(p.name for p in ds.glob("output_*.pb")) == [f"output_{k}.pb" for k in range(len(model.graph.output))]
        for k, vi in enumerate(model.graph.input):
            t = onnx.load_tensor(str(ds / f"input_{k}.pb"))
            assert t.name == vi.name
        for k, vi in enumerate(model.graph.output):
            t = onnx.load_tensor(str(ds / f"output_{k}.pb"))
            assert t.name == vi.name
        meta = _meta(d)
        assert meta["id"] == e["id"] and meta["bench_version"]
        assert meta["dml_operator"] == registry.get(e["op"]).dml_name
        assert meta["onnx"]["opset"] == e["opset"] == model.opset_import[0].version
        assert set(meta["inputs"]) >= {"family", "seed", "tensors"}
        assert json.loads((d / "data.json").read_text()) == {"rtol": e["tolerance"]["rtol"], "atol": e["tolerance"]["atol"]}


def test_expected_outputs_are_the_reference(curated):
    index = json.loads((curated / "index.json").read_text())
    cases = {c.id: c for c in F.curated_cases()}
    for e in index["cases"]:
        case = cases[e["id"]]
        op = case.operator
        inputs = case.inputs()
        ref = op.reference(case, inputs)
        model, ins, outs, meta = F.load_fixture(curated / e["path"])
        for name, arr in inputs.items():
            assert np.array_equal(ins[name], arr, equal_nan=arr.dtype.kind == "f")
        for name, arr in ref.items():
            assert outs[name].dtype == arr.dtype
            assert outs[name].tobytes() == arr.tobytes()


def test_index_lists_left_out_cases_with_reasons(curated):
    index = json.loads((curated / "index.json").read_text())
    left = {e["id"]: e for e in index["left_out"]}
    assert left, "the curated set shows the left-out policy"
    for e in left.values():
        assert e["reason"] and e["status"] in ("not-expressible", "open-point", "invalid", "error")
        assert not (curated / e["id"]).exists()
    statuses = {e["status"] for e in left.values()}
    assert statuses == {"not-expressible", "open-point"}
    ne = [e for e in left.values() if e["status"] == "not-expressible"]
    assert any("dilations" in e["reason"] and e["opset"] == 11 for e in ne)
    op_pts = [e for e in left.values() if e["status"] == "open-point"]
    assert {p for e in op_pts for p in e["open_points"]} == {"nan", "roi-half-rounding", "overflow", "storage-order-batch-channel"}
    for e in op_pts:
        for key in e["open_points"]:
            assert registry.get(e["op"]).open_point_texts[key] in e["reason"]
    assert index["include_open"] is False


def test_include_open_exports_with_the_policy_stated(tmp_path):
    cases = F.curated_cases()
    summary = F.export(cases, tmp_path / "open", include_open=True)
    assert not [e for e in summary.left_out if e["status"] == "open-point"]
    policy = [e for e in summary.exported if e["expected_output_is_policy"]]
    assert {p for e in policy for p in e["open_points"]} == {"nan", "roi-half-rounding", "overflow", "storage-order-batch-channel"}
    for e in policy:
        meta = _meta(tmp_path / "open" / e["path"])
        assert meta["expected_output_is_policy"] is True
        op = registry.get(e["op"])
        assert meta["open_points"] == {k: op.open_point_texts[k] for k in e["open_points"]}
    for e in summary.exported:
        if not e["expected_output_is_policy"]:
            assert _meta(tmp_path / "open" / e["path"])["open_points"] == {}


def test_maxpool_indices_metadata_states_first_occurrence(curated):
    d = _case_dir(curated, lambda e: e["op"] == "max_pooling2" and e["family"] == "ties")
    meta = _meta(d)
    idx = next(o for o in meta["outputs"] if o["name"] == "Indices")
    assert idx["compare"]["kind"] == "indices"
    assert idx["compare"]["ties"] == "first-occurrence"
    assert "first occurrence" in idx["compare"]["description"]
    assert idx["dtype"] == "int64"
    # the ties case really has ties, and the expected index is the first one in scan order
    model, ins, outs, _ = F.load_fixture(d)
    x = ins["X"].reshape(-1)
    assert np.array_equal(x[outs["Indices"]], outs["Y"])


def test_averagepool_tolerance_is_stated_and_reaches_the_runner(curated):
    index = json.loads((curated / "index.json").read_text())
    checked = 0
    for e in index["cases"]:
        if e["op"] != "average_pooling1":
            continue
        meta = _meta(curated / e["path"])
        n = math.prod(meta["descriptor"]["WindowSize"])
        rule = meta["outputs"][0]["compare"]
        assert rule["kind"] == "bound" and "k*u*sum|x|/count" in rule["description"]
        assert "gamma" not in rule["description"]
        # the bound, worked out here from the case's own tensors (summed in the data type, the widest
        # reading): k u sum|x|/count + (2u + u^2)(|y|(1 + u) + eta + k u sum|x|/count) + eta, k = n - 1,
        # and u (|y|(1 + u) + eta) + eta / 2 for the expected output's own rounding
        _, ins, outs, _ = F.load_fixture(curated / e["path"])
        x, y = ins["X"].astype(np.float64), outs["Y"].astype(np.float64)
        fi = np.finfo(ins["X"].dtype)
        u, eta = float(fi.eps) / 2, float(fi.smallest_subnormal)
        d = meta["descriptor"]
        if d["Dilations"] != [1, 1]:
            continue
        checked += 1
        xp = np.pad(np.abs(x), [(0, 0), (0, 0), (d["StartPadding"][0], d["EndPadding"][0]),
                                (d["StartPadding"][1], d["EndPadding"][1])])
        inside = np.pad(np.ones_like(x), [(0, 0), (0, 0), (d["StartPadding"][0], d["EndPadding"][0]),
                                         (d["StartPadding"][1], d["EndPadding"][1])])
        (kh, kw), (sh, sw) = d["WindowSize"], d["Strides"]
        worst = 0.0
        for i in range(y.shape[2]):
            for j in range(y.shape[3]):
                win = (Ellipsis, slice(i * sh, i * sh + kh), slice(j * sw, j * sw + kw))
                real = inside[win].sum(axis=(-2, -1))
                count = n if d["IncludePadding"] else real
                s_err = (real - 1) * u * xp[win].sum(axis=(-2, -1)) / count
                q = np.abs(y[..., i, j]) * (1 + u) + eta
                tol = s_err + (2 * u + u * u) * (q + s_err) + eta + u * q + eta / 2
                worst = max(worst, float(tol.max()))
        assert rule["max_abs_error"] == pytest.approx(worst, rel=1e-9)
        assert meta["runner_tolerance"]["rtol"] == 0.0
        assert meta["runner_tolerance"]["atol"] == pytest.approx(worst, rel=1e-9)
    assert checked >= 4
    # ONNX's loader picks rtol/atol up from data.json
    by_name = {tc.model_name: tc for tc in F.backend_test_cases(curated)}
    for e in index["cases"]:
        assert by_name[e["id"]].rtol == e["tolerance"]["rtol"]
        assert by_name[e["id"]].atol == e["tolerance"]["atol"]


@pytest.mark.parametrize("dtype,n", [(np.float32, 11), (np.float16, 11), (np.float16, 38), (np.float32, 3)])
def test_runner_tolerance_admits_every_result_within_n_ulp(dtype, n):
    from onnx_dml_bench.ops.base import OutputSpec
    tol = F.runner_tolerance(OutputSpec("ulp", ulp=n), "FLOAT16" if dtype == np.float16 else "FLOAT32")
    rng = np.random.default_rng(7)
    fi = np.finfo(dtype)
    # values near powers of two, tiny/subnormal values and ordinary ones
    base = np.concatenate([2.0 ** rng.integers(-30 if dtype == np.float32 else -14, 14, 400),
                           rng.normal(size=400) * 100, rng.integers(-40, 40, 200) * float(fi.smallest_subnormal)])
    ref = base.astype(dtype)
    for steps in range(-n, n + 1):
        got = ref.copy()
        toward = np.where(steps >= 0, np.inf, -np.inf).astype(dtype)
        for _ in range(abs(steps)):
            got = np.nextafter(got, toward)
        ok = np.isfinite(got)
        np.testing.assert_allclose(got[ok], ref[ok], rtol=tol["rtol"], atol=tol["atol"])
    # and it is not vacuous: 4n ULP away from an ordinary value is outside
    far = ref[400:800].copy()
    for _ in range(4 * n):
        far = np.nextafter(far, np.array(np.inf, dtype=dtype))
    assert not np.allclose(far, ref[400:800], rtol=tol["rtol"], atol=tol["atol"])


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------

def test_export_is_byte_identical_twice(tmp_path):
    cases = F.curated_cases() + registry.get("max_pooling2").sweep("smoke")[:10]
    a = F.export(cases, tmp_path / "a", include_open=True)
    b = F.export(list(reversed(cases)), tmp_path / "b", include_open=True)
    assert a.exported == b.exported and a.left_out == b.left_out
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert fa.keys() == fb.keys() and fa == fb
    # exporting again into the same folder replaces the previous export with the same bytes
    F.export(cases, tmp_path / "a", include_open=True)
    assert _files(tmp_path / "a") == fa
    # and a model serialises to the same bytes every time
    case = F.curated_cases()[0]
    m1 = case.operator.to_onnx(case).SerializeToString(deterministic=True)
    m2 = case.operator.to_onnx(case).SerializeToString(deterministic=True)
    assert m1 == m2


def test_curated_inputs_come_from_seeded_generators_only():
    for case in F.curated_cases():
        np.random.seed(1)
        a = case.inputs()
        np.random.seed(2)
        _ = np.random.random(100)
        b = case.inputs()
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].tobytes() == b[k].tobytes(), case.id
        if case.family == "explicit":
            assert case.values is not None
        else:
            assert case.values is None and isinstance(case.seed, int)


def test_committed_models_are_what_regenerate_curated_writes(tmp_path):
    assert (MODELS / "index.json").exists(), "models/ holds the curated fixtures"
    F.regenerate_curated(tmp_path / "m")
    # the export's files: index.json and the case folders (README.md and .gitattributes are not written by it)
    committed = {k: v for k, v in _files(MODELS).items() if "/" in k or k == "index.json"}
    fresh = _files(tmp_path / "m")
    assert committed.keys() == fresh.keys()
    changed = [k for k in fresh if committed[k] != fresh[k]]
    assert not changed, f"models/ is stale; run fixtures.regenerate_curated('models'): {changed[:5]}"
    assert sum(len(v) for v in committed.values()) < 2 * 1024 * 1024


def test_export_refuses_a_folder_with_unrelated_content(tmp_path):
    (tmp_path / "out" / "something").mkdir(parents=True)
    with pytest.raises(F.FixtureError, match="something"):
        F.export(F.curated_cases()[:2], tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# The DirectML documentation's worked examples
# ---------------------------------------------------------------------------------------------

def test_space_to_depth_page_examples_are_literal(curated):
    index = json.loads((curated / "index.json").read_text())
    explicit = [e for e in index["cases"] if e["family"] == "explicit"]
    assert len(explicit) == 8
    for e in explicit:
        model, ins, outs, meta = F.load_fixture(curated / e["path"])
        assert meta["descriptor"]["DataType"] == "UINT32"
        order = meta["descriptor"]["Order"]
        page_in = SD.PAGE_S2D_EXAMPLE1_INPUT if order == "DEPTH_COLUMN_ROW" else SD.PAGE_S2D_EXAMPLE2_INPUT
        if e["op"] == "space_to_depth1":
            assert ins["X"].shape == (1, 2, 4, 6) and outs["Y"].shape == (1, 8, 2, 3)
            assert tuple(ins["X"].reshape(-1)) == page_in
            assert tuple(outs["Y"].reshape(-1)) == SD.PAGE_S2D_OUTPUT
        else:
            assert ins["X"].shape == (1, 8, 2, 3) and outs["Y"].shape == (1, 2, 4, 6)
            assert tuple(ins["X"].reshape(-1)) == SD.PAGE_S2D_OUTPUT
            assert tuple(outs["Y"].reshape(-1)) == page_in


# ---------------------------------------------------------------------------------------------
# ONNX backend test machinery with onnxruntime.backend (CPU)
# ---------------------------------------------------------------------------------------------

def _cpu_disagrees(meta: dict) -> bool:
    """Cases where ONNX Runtime 1.31's CPU EP disagrees with the DirectML reference."""
    d, opts = meta["descriptor"], meta["onnx"]["options"]
    if meta["op"] in ("max_pooling2", "average_pooling1") and opts.get("auto_pad") == "SAME_UPPER" \
            and any(x != 1 for x in d["Dilations"]):
        return True      # SAME pads computed without the dilation: output shape differs
    if meta["op"] == "roi_pooling" and meta["inputs"]["family"] == "inf":
        return True      # the bin maximum starts at -FLT_MAX, so a bin of -inf gives -FLT_MAX
    return False


def _cpu_cannot_run(meta: dict) -> bool:
    """Cases the installed ONNX Runtime's CPU EP cannot run (a session or kernel error, not a verdict)."""
    opset = meta["onnx"]["opset"]
    if opset > ORT_MAX_OPSET:
        return True      # 1.31 loads opsets up to 25, 1.32 up to 28
    if meta["op"] in ("space_to_depth1", "depth_to_space1") and meta["onnx"]["options"].get("form") == "native" \
            and meta["data_type"] not in ("FLOAT32", "FLOAT64", "FLOAT16", "UINT8") \
            and not (ORT_LOADS_OPSET_28 and opset >= 28):
        return True      # no -13 kernel for these types (1.32 runs a -28 node without kernel as its function body)
    if meta["op"] == "roi_pooling" and meta["data_type"] == "FLOAT16":
        return True      # float16 MaxRoiPool: an invalid inserted Cast at session creation
    return False


def _run_backend(folder: Path):
    import onnxruntime.backend as backend
    runner = F.backend_runner(folder, backend, __name__,
                              prepare_kwargs={"graph_optimization_level": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                              "log_severity_level": 3})
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(runner.test_suite)
    outcome = {}
    for test, _ in result.failures:
        outcome[test._testMethodName] = "fail"
    for test, _ in result.errors:
        outcome[test._testMethodName] = "error"
    for test, _ in result.skipped:
        outcome[test._testMethodName] = "skip"
    return result, outcome


def test_backend_runner_passes_agreeing_cases_and_fails_disagreeing_ones(curated):
    result, outcome = _run_backend(curated)
    index = json.loads((curated / "index.json").read_text())
    expected = {}
    for e in index["cases"]:
        meta = _meta(curated / e["path"])
        name = F.backend_test_name(e["id"]) + "_cpu"
        expected[name] = "error" if _cpu_cannot_run(meta) else "fail" if _cpu_disagrees(meta) else "pass"
        # the CUDA variant is skipped on a CPU-only build
        assert outcome.get(F.backend_test_name(e["id"]) + "_cuda") == "skip"
    got = {name: outcome.get(name, "pass") for name in expected}
    assert result.testsRun == 2 * len(index["cases"])
    assert got == expected
    # the known disagreements are all there, so the test can fail
    fails = {n for n, v in got.items() if v == "fail"}
    assert any("sameupper" in n and "d2x2" in n for n in fails)
    assert any(n.startswith("test_roi_f32") and "_inf_" in n for n in fails)
    assert sum(v == "pass" for v in got.values()) >= 25


def test_backend_runner_fails_a_corrupted_expectation(curated, tmp_path):
    """Negative control: the runner is not vacuous on an agreeing case."""
    src = _case_dir(curated, lambda e: e["op"] == "max_pooling2" and e["family"] == "ties")
    folder = tmp_path / "one"
    shutil.copytree(src, folder / src.name)
    out = folder / src.name / "test_data_set_0" / "output_1.pb"
    t = onnx.load_tensor(str(out))
    arr = numpy_helper.to_array(t).copy()
    arr.reshape(-1)[0] += 1
    out.write_bytes(numpy_helper.from_array(arr, t.name).SerializeToString())
    _, outcome = _run_backend(folder)
    assert outcome[F.backend_test_name(src.name) + "_cpu"] == "fail"


# ---------------------------------------------------------------------------------------------
# verify_fixture
# ---------------------------------------------------------------------------------------------

def test_verify_fixture_agrees_with_the_runner(curated, tmp_path):
    ok = F.verify_fixture(_case_dir(curated, lambda e: e["op"] == "max_pooling2" and e["family"] == "ties"))
    assert ok.passed and ok.outputs["Indices"]["ok"]
    bad = F.verify_fixture(_case_dir(curated, lambda e: e["op"] == "roi_pooling" and e["family"] == "inf"))
    assert bad.status == "fail" and not bad.outputs["Y"]["ok"]
    shape = F.verify_fixture(_case_dir(curated, lambda e: "sameupper" in e["id"] and e["op"] == "max_pooling2"))
    assert shape.status == "fail" and "shape" in shape.message
    # float32 extremes: ONNX Runtime sums in float32 and overflows where the exact average is finite;
    # the overflow open point allows that (the case is exported only with include_open)
    ap_case = [c for c in F.curated_cases() if c.op == "average_pooling1" and c.family == "extremes" and c.dtype == "FLOAT32"]
    F.export(ap_case, tmp_path / "open", include_open=True)
    ap = F.verify_fixture(tmp_path / "open" / ap_case[0].id)
    assert ap.passed and ap.outputs["Y"]["alternative"] == "overflow-to-non-finite"
    o28 = F.verify_fixture(_case_dir(curated, lambda e: e["opset"] == 28))
    if ORT_LOADS_OPSET_28:
        assert o28.passed, o28.message        # uint32 SpaceToDepth-28 CRD, as its function body
    else:
        assert o28.status == "error" and o28.message
    # an error in every release: native SpaceToDepth-13 has no uint32 CPU kernel
    err = F.verify_fixture(_case_dir(curated, lambda e: e["op"] == "space_to_depth1" and e["opset"] == 13
                                     and e["dtype"] == "UINT32" and "native" in e["id"]))
    assert err.status == "error" and err.message


def test_compare_output_tells_ties_from_wrong_indices():
    # the tie rule is the operator's (window membership included), applied by the verdict path
    from onnx_dml_bench import verdict
    from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc
    mp = registry.OPERATORS["max_pooling2"]
    # two 2x2 windows (stride 2): flat indices {0, 1, 4, 5} and {2, 3, 6, 7}
    x = (1.0, 3.0, 3.0, 0.0,
         3.0, 0.0, 0.0, 0.0)
    d = MaxPooling2Desc(InputSizes=(1, 1, 2, 4), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2),
                        WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1),
                        OutputIndicesDataType="UINT32")
    case = Case(mp, d, 12, make_variant(), "explicit", 0, (("X", x),))
    inputs = case.inputs()
    ref = mp.reference(case, inputs)
    assert ref["Indices"].reshape(-1).tolist() == [1, 2]         # first occurrence of each maximum

    def indices(*idx):
        side = verdict.compare_side(case, inputs, ref, {"Y": ref["Y"], "Indices": np.array(idx, dtype=np.int64)
                                                        .reshape(ref["Indices"].shape)})
        assert side["Y"].match
        return side["Indices"]

    assert indices(1, 2).match
    # 4 holds the same maximum inside the first window: a tie resolved in another order
    res = indices(4, 2)
    assert not res.match and res.mismatches == 1 and "tie-order" in res.labels and "wrong-index" not in res.labels
    # 2 holds an equal value but outside the first window: a wrong index
    res = indices(2, 2)
    assert not res.match and res.mismatches == 1 and "wrong-index" in res.labels and "tie-order" not in res.labels
    # 5 is inside the window but not at its maximum: a wrong index
    res = indices(5, 2)
    assert not res.match and res.mismatches == 1 and "wrong-index" in res.labels and "tie-order" not in res.labels
    # the plain rules of fixtures without a case
    assert not F.compare_output("exact", np.float32([-0.0]), np.float32([0.0]))["ok"]
    assert F.compare_output("exact", np.float32([np.nan]), np.float32([np.nan]))["ok"]
    assert F.compare_output("ulp", np.float32([1.0 + 2 ** -22]), np.float32([1.0]), ulp=2)["ok"]
    assert not F.compare_output("ulp", np.float32([np.inf]), np.float32([np.finfo(np.float32).max]), ulp=5)["ok"]


# ---------------------------------------------------------------------------------------------
# Safe loading
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def with_initializer(curated, tmp_path) -> Path:
    """A copy of a fixture whose graph has initializers (a decomposed SpaceToDepth)."""
    src = _case_dir(curated, lambda e: e["op"] == "space_to_depth1" and "decomposed" in e["id"]
                    and e["family"] == "explicit")
    dst = tmp_path / "fx" / src.name
    shutil.copytree(src, dst)
    return dst


def _externalise(case_dir: Path, location: str, payload_path: Path | None = None) -> str:
    model = onnx.load(str(case_dir / "model.onnx"))
    t = model.graph.initializer[0]
    raw = numpy_helper.to_array(t).tobytes()
    if payload_path is not None:
        payload_path.parent.mkdir(parents=True, exist_ok=True)
        payload_path.write_bytes(raw)
    t.ClearField("raw_data")
    del t.int64_data[:]
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(len(raw)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    (case_dir / "model.onnx").write_bytes(model.SerializeToString())
    return t.name


def test_external_data_inside_the_folder_loads(with_initializer):
    name = _externalise(with_initializer, "weights/shape.bin", with_initializer / "weights" / "shape.bin")
    model, ins, outs, meta = F.load_fixture(with_initializer)
    t = next(i for i in model.graph.initializer if i.name == name)
    assert t.data_location == TensorProto.DEFAULT
    assert F.verify_fixture(with_initializer).passed


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "backslash-dotdot", "missing"])
def test_external_data_outside_the_folder_is_refused(with_initializer, tmp_path, kind):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\0" * 64)
    if kind == "absolute":
        location = str(outside)
    elif kind == "dotdot":
        location = "../../outside.bin"
    elif kind == "backslash-dotdot":
        location = "..\\..\\outside.bin"
    elif kind == "symlink":
        if not hasattr(os, "symlink"):
            pytest.skip("no symbolic links here")
        (with_initializer / "link.bin").symlink_to(outside)
        location = "link.bin"
    else:
        location = "nowhere.bin"
    name = _externalise(with_initializer, location)
    with pytest.raises(F.FixtureError) as err:
        F.load_fixture(with_initializer)
    msg = str(err.value)
    assert repr(name) in msg and repr(location) in msg
    assert "model.onnx" in msg


@pytest.mark.parametrize("which", ["input_0.pb", "output_0.pb"])
def test_truncated_pb_gives_a_clear_error_naming_the_file(curated, tmp_path, which):
    src = _case_dir(curated, lambda e: e["op"] == "max_pooling2" and e["family"] == "ties")
    full = (src / "test_data_set_0" / which).read_bytes()
    for cut in sorted({0, 1, 2, 5, 10, len(full) // 2, len(full) - 100, len(full) - 1} | set(range(0, 40))):
        dst = tmp_path / f"c{cut}" / src.name
        shutil.copytree(src, dst)
        (dst / "test_data_set_0" / which).write_bytes(full[:cut])
        with pytest.raises(F.FixtureError) as err:
            F.load_fixture(dst)
        assert which in str(err.value), (cut, str(err.value))
        shutil.rmtree(dst.parent)


def test_corrupt_model_and_metadata_give_clear_errors(curated, tmp_path):
    src = _case_dir(curated, lambda e: e["op"] == "roi_pooling")
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    good = (dst / "model.onnx").read_bytes()
    (dst / "model.onnx").write_bytes(good[: len(good) // 2])
    with pytest.raises(F.FixtureError, match="model.onnx"):
        F.load_fixture(dst)
    (dst / "model.onnx").write_bytes(good)
    (dst / "case.json").write_text("{\"id\": ")
    with pytest.raises(F.FixtureError, match="case.json"):
        F.load_fixture(dst)
    (dst / "case.json").write_bytes((src / "case.json").read_bytes())
    (dst / "test_data_set_0" / "input_1.pb").unlink()
    with pytest.raises(F.FixtureError, match="input"):
        F.load_fixture(dst)


# ---------------------------------------------------------------------------------------------
# Selection and the command-line entry
# ---------------------------------------------------------------------------------------------

def test_fixtures_command_selects_and_summarises(tmp_path, capsys):
    rc = F.fixtures_command(tmp_path / "o", "smoke", ["max_pooling2"], ["f16"], False)
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0 and len(out) == 1 and out[0].startswith("fixtures: ")
    index = json.loads((tmp_path / "o" / "index.json").read_text())
    assert index["cases"] and {e["dtype"] for e in index["cases"] + index["left_out"]} == {"FLOAT16"}
    assert {e["op"] for e in index["cases"]} == {"max_pooling2"}
    assert F.fixtures_command(tmp_path / "p", "smoke", ["DML_ROI_POOLING_OPERATOR_DESC"], ["FLOAT32"], True) == 0
    assert F.fixtures_command(tmp_path / "q", "smoke", None, ["nope"], False) == 2
    assert F.fixtures_command(tmp_path / "q", "smoke", ["nope"], None, False) == 2
    assert F.fixtures_command(tmp_path / "q", "nope", None, None, False) == 2
    assert F.fixtures_command(tmp_path / "q", "smoke", ["roi_pooling"], ["u8"], False) == 1


def test_invalid_and_inexpressible_cases_are_left_out_with_reasons(tmp_path):
    from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc
    d = MaxPooling2Desc(InputSizes=(1, 1, 4, 4), DataType="INT32", DimensionCount=2, Strides=(1, 1),
                        WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    not_onnx = Case(registry.OPERATORS["max_pooling2"], d, 12, make_variant(), "random", 1)
    invalid = Case(registry.OPERATORS["max_pooling2"], d.replace(WindowSize=(9, 9), DataType="FLOAT32"), 12, make_variant(), "random", 1)
    s = F.export([not_onnx, invalid], tmp_path / "o")
    assert not s.exported
    reasons = {e["status"]: e["reason"] for e in s.left_out}
    assert "int32" in reasons["not-expressible"]
    assert "WindowSize" in reasons["invalid"]
