"""The sized profiles: ``networks`` (the census's layers at their real shapes, as the exporters wrote
them) and ``limits`` (GPU boundaries), the ONNX forms they add to the pooling descriptors
(GlobalAveragePool / GlobalMaxPool, ReduceMean, Pad + pooling), the size limit that sizes them
(``--max-elements``) and the memory check before a run."""
from __future__ import annotations

import math

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import case_from_dict, CaseFileError
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.errors import PlanError
from onnx_dml_bench.lanes.base import descriptor_case, onnx_side_variant
from onnx_dml_bench.ops import _census, _networks
from onnx_dml_bench.ops.average_pooling1 import AveragePooling1Desc
from onnx_dml_bench.ops.base import MAX_TENSOR_ELEMENTS, DescriptorError
from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.plan import RunPlan, RunRequest, check_memory, select_cases, sweep_cases
from onnx_dml_bench.verdict import judge, placement

AP = registry.get("average_pooling1")
MP = registry.get("max_pooling2")

pytestmark = pytest.mark.xdist_group("networks")


@pytest.fixture(scope="module")
def networks():
    return sweep_cases("networks")


@pytest.fixture(scope="module")
def limits():
    return sweep_cases("limits")


def ap_desc(sizes, window=None, dt="FLOAT32", **kw):
    nd = len(sizes) - 2
    fields = dict(InputSizes=tuple(sizes), DataType=dt, DimensionCount=nd, Strides=(1,) * nd,
                  WindowSize=tuple(window or sizes[2:]), StartPadding=(0,) * nd, EndPadding=(0,) * nd,
                  Dilations=(1,) * nd)
    fields.update(kw)
    return AveragePooling1Desc(**fields)


def mp_desc(sizes, window=None, dt="FLOAT32", **kw):
    nd = len(sizes) - 2
    fields = dict(InputSizes=tuple(sizes), DataType=dt, DimensionCount=nd, Strides=(1,) * nd,
                  WindowSize=tuple(window or sizes[2:]), StartPadding=(0,) * nd, EndPadding=(0,) * nd,
                  Dilations=(1,) * nd)
    fields.update(kw)
    return MaxPooling2Desc(**fields)


# ---- profile networks ------------------------------------------------------------------------------

def test_networks_is_every_operator_and_every_case_is_valid(networks):
    # every operator but the first RoiAlign version (its successor takes the census's RoiAlign layers)
    assert {c.op for c in networks} == set(registry.names()) - {"roi_align"}
    assert len({c.id for c in networks}) == len(networks)
    for c in networks:
        assert c.operator.admit(c, data=False).ok, (c.id, c.operator.admit(c, data=False).reason)
        assert c.source["profile"] == "networks" and c.source["models"] and c.source["layers"], c.id
        assert c.operator.check_size(c.desc) is None


def test_networks_is_deterministic():
    a, b = sweep_cases("networks", ["space_to_depth1"]), sweep_cases("networks", ["space_to_depth1"])
    assert [c.id for c in a] == [c.id for c in b] and [c.source for c in a] == [c.source for c in b]


def test_networks_types_batches_and_the_exporters_opset(networks):
    assert {c.dtype for c in networks} == {"FLOAT32", "FLOAT16"}
    assert {c.opset for c in networks} == {20}
    # batch 1 and the serving batch of one layer, in both types
    l1 = [c for c in networks if c.source["layers"] == ["L0001"]]
    assert {(c.source["batch"], c.dtype) for c in l1} == {(b, t) for b in (1, 8) for t in ("FLOAT32", "FLOAT16")}


def test_global_average_is_both_exporters_graphs(networks):
    """nn.AdaptiveAvgPool2d(1): TorchScript writes GlobalAveragePool, torch's default (dynamo)
    exporter ReduceMean over [-1, -2] with keepdims 1; both run the same descriptor."""
    l1 = [c for c in networks if c.source["layers"] == ["L0001"] and c.dtype == "FLOAT32" and c.source["batch"] == 1]
    forms = {c.v.get("form"): c for c in l1}
    assert set(forms) == {"global", "reduce_mean"}
    assert forms["reduce_mean"].v == {"form": "reduce_mean", "axes": "negative"}
    assert forms["global"].desc == forms["reduce_mean"].desc
    d = forms["global"].desc
    assert d.InputSizes == (1, 16, 56, 56) and d.WindowSize == (56, 56) and "torchvision:mobilenet_v3_small" in \
        forms["global"].source["models"]
    nodes = [n.op_type for n in AP.to_onnx(forms["reduce_mean"]).graph.node]
    assert nodes == ["ReduceMean"]
    assert [n.op_type for n in AP.to_onnx(forms["global"]).graph.node] == ["GlobalAveragePool"]


def test_mean_without_keepdims_and_3d_global(networks):
    kd0 = [c for c in networks if c.v.get("keepdims") == 0]
    assert kd0 and all(AP.outputs(c)["Y"][0] == c.desc.InputSizes[:2] for c in kd0)
    assert any(len(c.desc.InputSizes) == 5 and c.v.get("form") == "global" for c in networks)


def test_exported_attributes_are_kept(networks):
    """AveragePool with the exporter's ceil_mode / count_include_pad / pads; timm's *Same layers as
    Pad + pooling; PixelShuffle as DepthToSpace CRD; pixel_unshuffle as Reshape-Transpose-Reshape;
    RoI pooling at the Fast R-CNN layer's size; 3-D max pooling."""
    by_kind = {}
    for c in networks:
        for k in c.source["kinds"]:
            by_kind.setdefault(k, []).append(c)
    assert any(c.v.get("ceil_mode") == 1 for c in by_kind["avg_pool2d"])
    assert any(c.desc.IncludePadding for c in by_kind["avg_pool2d"]) and \
        any(not c.desc.IncludePadding for c in by_kind["avg_pool2d"])
    assert {c.v.get("form") for c in by_kind["max_pool2d_same"]} == {"pad"}
    assert {c.v.get("form") for c in by_kind["avg_pool2d_same"]} == {"pad"}
    assert any(c.v.get("count_include_pad") == 0 for c in by_kind["avg_pool2d_same"])
    assert {(c.desc.Order, c.v["form"]) for c in by_kind["pixel_shuffle"]} == {("COLUMN_ROW_DEPTH", "native")}
    assert {(c.desc.Order, c.v["form"]) for c in by_kind["pixel_unshuffle"]} == {("COLUMN_ROW_DEPTH", "decomposed")}
    assert {(c.desc.Order, c.v["form"]) for c in by_kind["space_to_depth"]} == {("DEPTH_COLUMN_ROW", "decomposed")}
    roi = {(c.desc.InputSizes, c.desc.num_rois, c.desc.PooledSize, c.desc.SpatialScale) for c in by_kind["roi_pool"]}
    assert ((1, 512, 38, 50), 300, (7, 7), 0.0625) in roi and ((8, 512, 38, 50), 2400, (7, 7), 0.0625) in roi
    assert any(c.desc.DimensionCount == 3 for c in by_kind["max_pool3d"])


@pytest.mark.parametrize("layer", ["L0001", "L0526"])
def test_the_built_graph_is_the_exported_one(networks, layer):
    """The case's nodes carry the exported node types and the attributes that decide the answer."""
    exports = [e for e in _census.exports() if e.layer == layer]
    cases = [c for c in networks if layer in c.source["layers"] and c.source["batch"] == c.source["census_batch"]]
    assert cases
    for e in exports:
        built = [[n.op_type for n in c.operator.to_onnx(c).graph.node] for c in cases]
        assert [n["op"] for n in e.nodes] in built, (e.exporter, e.ops, built)


def test_every_census_layer_is_a_case_or_left_out_for_a_stated_reason():
    cov = _networks.coverage(registry.OPERATORS.values(), MAX_TENSOR_ELEMENTS)
    assert set(cov) == {layer["id"] for layer in _census.data()["layers"]}
    reasons = {r for r in cov.values() if r}
    assert reasons <= set(_networks.LEFT_OUT.values()) | {_networks.OVER_LIMIT}, reasons - set(_networks.LEFT_OUT.values())
    covered = sum(1 for r in cov.values() if r is None)
    assert covered >= 770, covered
    assert cov["L0776"] == _networks.OVER_LIMIT          # PixelShuffle over 2^28 elements
    assert _networks.coverage(registry.OPERATORS.values(), 2**28)["L0776"] is None


# ---- the ONNX forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [1, 11, 13, 18, 20, 22])
def test_reduce_mean_axes_attribute_or_input_by_opset(opset):
    c = AP.make_case(ap_desc((2, 3, 5, 7)), {"form": "reduce_mean", "keepdims": 0}, "real", opset)
    if opset < 11:
        node = AP.to_onnx(c).graph.node[0]
        assert [a.name for a in node.attribute] == ["axes", "keepdims"]
    m = AP.to_onnx(c)
    node = m.graph.node[0]
    if opset >= 18:
        assert list(node.input)[1] == "axes" and m.graph.initializer[0].name == "axes"
    else:
        assert len(node.input) == 1 and [a.name for a in node.attribute] == ["axes", "keepdims"]
    assert AP.expressible(c) is None


def test_forms_refuse_what_they_cannot_carry():
    g = ap_desc((1, 2, 6, 6))
    with pytest.raises(DescriptorError, match="global window"):
        AP.check_variant(AP.make_case(ap_desc((1, 2, 6, 6), (3, 3)), {"form": "global"}))
    with pytest.raises(DescriptorError, match="onnx.keepdims"):
        AP.check_variant(AP.make_case(g, {"form": "global", "keepdims": 0}))
    with pytest.raises(DescriptorError, match="onnx.ceil_mode"):
        AP.check_variant(AP.make_case(g, {"form": "reduce_mean", "ceil_mode": 1}))
    with pytest.raises(DescriptorError, match="OutputIndicesTensor"):
        MP.check_variant(MP.make_case(mp_desc((1, 2, 6, 6), OutputIndicesDataType="UINT32"), {"form": "global"}))
    with pytest.raises(DescriptorError, match="IncludePadding"):
        AP.check_variant(AP.make_case(ap_desc((1, 2, 6, 6), (3, 3), StartPadding=(1, 1), EndPadding=(1, 1)),
                                      {"form": "pad"}))
    with pytest.raises(DescriptorError, match="onnx.form"):
        MP.check_variant(MP.make_case(mp_desc((1, 2, 6, 6)), {"form": "reduce_mean"}))


def test_forms_expressible_by_opset_and_type():
    g8 = mp_desc((1, 2, 6, 6), dt="INT8")
    assert "GlobalMaxPool" in MP.expressible(MP.make_case(g8, {"form": "global"}, "random", 12))
    p8 = mp_desc((1, 2, 6, 6), (3, 3), dt="INT8", StartPadding=(1, 1), EndPadding=(1, 1))
    assert "Pad-2" in MP.expressible(MP.make_case(p8, {"form": "pad"}, "random", 10))
    assert MP.expressible(MP.make_case(p8, {"form": "pad"}, "random", 12)) is None
    assert AP.expressible(AP.make_case(ap_desc((1, 2, 6, 6)), {"form": "global"}, "real", 1)) is None


def _cpu_run(cases):
    from onnx_dml_bench.execute import RunConfig, run_cases
    from onnx_dml_bench.lanes.catalog import resolve
    return {r.case_id: r for r in run_cases(cases, resolve("cpu"), RunConfig(jobs=1))}


def test_forms_pass_on_the_cpu_ep_with_their_nodes_placed():
    pad_ap = ap_desc((1, 3, 9, 9), (3, 3), Strides=(2, 2), EndPadding=(1, 1), IncludePadding=True)
    pad_mp = mp_desc((1, 3, 9, 9), (3, 3), Strides=(2, 2), StartPadding=(1, 0), EndPadding=(1, 1))
    cases = [AP.make_case(ap_desc((2, 3, 7, 9)), v, "real", o)
             for o in (13, 20) for v in ({"form": "global"}, {"form": "reduce_mean", "axes": "negative"},
                                         {"form": "reduce_mean", "keepdims": 0})]
    cases += [AP.make_case(ap_desc((1, 2, 3, 4, 5)), {"form": "global"}, "real", 20),
              AP.make_case(pad_ap, {"form": "pad", "count_include_pad": 0}, "real", 20),
              AP.make_case(pad_ap, {"form": "pad"}, "real", 10),
              MP.make_case(pad_mp, {"form": "pad"}, "negative", 20),
              MP.make_case(mp_desc((2, 3, 9, 9)), {"form": "global"}, "random", 20)]
    recs = _cpu_run(cases)
    for c in cases:
        r = recs[c.id]
        assert r.verdict == "PASS", (c.id, r.reason)
        nodes = [n.name for n in c.operator.build(c, "").nodes]
        assert set(r.placement.nodes) == set(nodes) and set(r.placement.nodes.values()) == {"CPUExecutionProvider"}


@pytest.mark.parametrize("variant", [{"form": "global"}, {"form": "reduce_mean", "axes": "negative"},
                                     {"form": "reduce_mean", "keepdims": 0}])
def test_a_global_average_is_judged_against_the_descriptor(variant):
    """The form's expected answer is the descriptor's reference; a right answer passes, a wrong
    one (one output off by a lot, or all zeros) fails as the EP's."""
    c = AP.make_case(ap_desc((2, 4, 12, 12), dt="FLOAT32"), variant, "real", 20)
    x = c.inputs()
    ref = AP.reference(c, x)["Y"]
    want = ref if variant.get("keepdims", 1) else ref.reshape(ref.shape[:2])
    assert np.array_equal(AP.expected(c, x)["Y"], want)
    right = judge(c, x, Outcome(True, "done", None, {"Y": want}), None, None, ep_name="EP", ep_is_cpu=False)
    assert right.verdict == "PASS"
    wrong = want.copy()
    wrong.flat[3] += 1.0
    bad = judge(c, x, Outcome(True, "done", None, {"Y": wrong}), None, None, ep_name="EP", ep_is_cpu=False)
    assert bad.verdict == "FAIL" and bad.attribution == "EP_WRONG" and bad.outputs["Y"].mismatches == 1
    zeros = judge(c, x, Outcome(True, "done", None, {"Y": np.zeros_like(want)}), None, None, ep_name="EP",
                  ep_is_cpu=False)
    assert zeros.verdict == "FAIL"


@pytest.mark.parametrize("variant", [{"form": "global"}, {"form": "reduce_mean", "keepdims": 0}])
def test_a_float16_squeeze_layer_of_12544_elements_in_a_form(variant):
    """GlobalAveragePool / ReduceMean (no keepdims) of float16 112x112 windows: summed in float32
    and rounded once (DirectML) passes, a float16 running sum fails (stalled-accumulator), all zeros fails
    with a label that says so (not "overflow"). The window statistics are in the form's output
    shape (N x C without keepdims)."""
    rng = np.random.default_rng(12544)
    x = rng.random((1, 4, 112, 112)).astype(np.float16)
    c = Case(AP, ap_desc((1, 4, 112, 112), dt="FLOAT16"), 20, make_variant(**variant), "explicit", 0,
             (("X", tuple(float(v) for v in x.ravel())),))
    ins = c.inputs()
    shape = AP.outputs(c)["Y"][0]
    wide = (x.astype(np.float32).sum(axis=(2, 3), dtype=np.float32) / np.float32(12544)).astype(np.float16)
    acc = np.zeros((1, 4), np.float16)
    for v in x.reshape(1, 4, -1).transpose(2, 0, 1):
        acc = (acc + v).astype(np.float16)
    in_type = (acc.astype(np.float64) / 12544).astype(np.float16)

    def one(y):
        return judge(c, ins, Outcome(True, "done", None, {"Y": y.reshape(shape)}), None, None, ep_name="EP",
                     ep_is_cpu=False)
    j = one(wide)
    assert j.verdict == "PASS", j.reason
    j = one(in_type)
    assert j.verdict == "FAIL" and "stalled-accumulator" in j.labels, j.reason
    j = one(np.zeros((1, 4), np.float16))
    assert j.verdict == "FAIL" and "wrong-zeros" in j.labels and not any("overflow" in lab for lab in j.labels)


def test_a_global_max_is_judged_against_the_descriptor():
    c = MP.make_case(mp_desc((2, 3, 9, 9)), {"form": "global"}, "random", 20)
    x = c.inputs()
    ref = x["X"].max(axis=(2, 3), keepdims=True)
    assert np.array_equal(MP.expected(c, x)["Y"], ref)
    wrong = ref.copy()
    wrong[1, 2] = x["X"][1, 2].min()
    j = judge(c, x, Outcome(True, "done", None, {"Y": wrong}), None, None, ep_name="EP", ep_is_cpu=False)
    assert j.verdict == "FAIL" and j.outputs["Y"].mismatches == 1


def test_placement_of_a_form_names_its_nodes():
    c = AP.make_case(ap_desc((1, 2, 6, 6)), {"form": "reduce_mean"}, "real", 20)
    names = [n.name for n in AP.build(c, "").nodes]
    assert names == ["ReduceMean"]
    where = placement(names, {"ReduceMean": "CPUExecutionProvider"}, "XEP", False)
    assert where.nodes == {"ReduceMean": "CPUExecutionProvider"}     # judged NOT_OFFLOADED by verdict.off_ep


def test_the_direct_lane_runs_a_form_as_its_descriptor():
    c = AP.make_case(ap_desc((1, 2, 6, 6)), {"form": "global"}, "real", 20)
    assert onnx_side_variant(c) == {"form": "global"}
    assert descriptor_case(c).variant == () and descriptor_case(c).desc == c.desc


def test_normalize_makes_a_fuzzed_form_valid():
    c = Case(AP, ap_desc((1, 2, 6, 6), (2, 3), StartPadding=(1, 0)), 20,
             make_variant(form="global", ceil_mode=1, keepdims=0, count_include_pad=1), "real", 1)
    n = AP.normalize(c)
    AP.check_variant(n)
    assert n.desc.WindowSize == (6, 6) and n.v == {"form": "global"}


# ---- profile limits ----------------------------------------------------------------------------

def test_limits_has_the_cudnn_batch_boundary(limits):
    want = {(n, "FLOAT32") for n in (65535, 65536, 65537)}
    for op in (MP, AP):
        got = {(c.desc.InputSizes[0], c.dtype) for c in limits if c.operator is op and c.desc.InputSizes[1:] == (1, 1, 512)
               and c.desc.WindowSize == (1, 2) and c.desc.Strides == (1, 2) and not c.v
               and not getattr(c.desc, "OutputIndicesDataType", None)}
        assert want <= got, op.key
    assert all(c.source["profile"] == "limits" and c.source["boundary"] for c in limits)
    assert {c.source["boundary"] for c in limits} >= {"count", "groups", "window", "index-2^24", "f16-long-sum"}


def test_limits_windows_and_long_float16_sums(limits):
    ap = [c for c in limits if c.operator is AP and c.source["boundary"] == "f16-long-sum"]
    sizes = {math.prod(c.desc.WindowSize) for c in ap}
    assert {2**8, 2**20} <= sizes and {c.family for c in ap} == {"small"} and {c.dtype for c in ap} == {"FLOAT16"}
    assert {c.v.get("form") for c in ap} == {"global", "reduce_mean", None}
    # a sum of 2^20 of them stays within float16 (no overflow for an answer to hide behind)
    big = min((c for c in ap if math.prod(c.desc.WindowSize) == 2**20), key=lambda c: c.desc.InputSizes[1])
    assert float(big.inputs()["X"].astype(np.float64).sum(axis=(2, 3)).max()) < 65504


def test_limits_is_sized_by_max_elements():
    default = sweep_cases("limits", ["max_pooling2"])
    assert all(max(math.prod(s) for s in (c.desc.InputSizes, MP.output_shape(c.desc))) <= MAX_TENSOR_ELEMENTS
               for c in default)
    bounds = {c.source["boundary"] for c in default}
    assert "index-2^24" in bounds and "index-2^31" not in bounds
    bigger = sweep_cases("limits", ["max_pooling2"], max_elements=2**32)
    assert {c.source["boundary"] for c in bigger} >= {"index-2^31"} and len(bigger) > len(default)
    assert "index-2^32" in {c.source["boundary"] for c in sweep_cases("limits", ["max_pooling2"], max_elements=2**33)}
    small = sweep_cases("limits", ["max_pooling2"], max_elements=2**20)
    assert small and all(math.prod(c.desc.InputSizes) <= 2**20 for c in small)


def test_a_worker_admits_by_the_runs_limit():
    c = AP.make_case(ap_desc((1, 1, 1, MAX_TENSOR_ELEMENTS + 2), (1, 2), Strides=(1, 2)), {}, "real")
    refused = AP.admit(c, data=False)
    assert refused.verdict == "ERROR" and "--max-elements" in refused.reason and "input X" in refused.reason
    assert AP.admit(c, data=False, max_elements=2**27).ok


def test_a_case_file_beyond_the_limit_is_refused_naming_the_tensor(tmp_path):
    entry = {"op": "average_pooling1", "descriptor": {"InputSizes": [1, 1, 2, 2**26], "DataType": "FLOAT32",
                                                      "DimensionCount": 2, "Strides": [1, 1], "WindowSize": [1, 1],
                                                      "StartPadding": [0, 0], "EndPadding": [0, 0],
                                                      "Dilations": [1, 1]}}
    with pytest.raises(CaseFileError, match=r"InputTensor.Sizes: input X \[1, 1, 2, 67108864\] would have 134,217,728"):
        case_from_dict(entry, "file: case 0")
    assert case_from_dict(entry, "file: case 0", max_elements=2**28).desc.InputSizes[3] == 2**26


def test_a_limit_the_machine_cannot_hold_is_refused_before_any_allocation(monkeypatch):
    from onnx_dml_bench import plan
    monkeypatch.setattr(plan, "memory", lambda: {"total": 8 << 30, "available": 6 << 30})
    with pytest.raises(PlanError, match=r"--max-elements 8,589,934,592: one tensor of that many elements is 16.0 GiB"):
        check_memory([], 2**33)
    cases = sweep_cases("limits", ["max_pooling2"], max_elements=2**32)
    big = [c for c in cases if c.source["boundary"] == "index-2^31"]
    with pytest.raises(PlanError, match=r"case mp2-f32-.*: its input X \[1, 1, 46341, 46341\] is 2,147,488,281 FLOAT32 "
                                        r"elements \(8.0 GiB\)"):
        check_memory(big, 2**32)
    with pytest.raises(PlanError, match=r"--max-elements 4,294,967,296: case mp2-f32-.* the rest left as headroom"):
        RunPlan.build(RunRequest(profile="limits", ops=("max_pooling2",), max_elements=2**32))


def test_the_run_plan_carries_the_limit_to_the_workers():
    plan = RunPlan.build(RunRequest(profile="limits", ops=("roi_pooling",), max_elements=2**20))
    assert plan.cfg.max_elements == 2**20 and plan.selection["max_elements"] == 2**20
    assert plan.cases and all(math.prod(c.desc.InputSizes) <= 2**20 for c in plan.cases)
    default = RunPlan.build(RunRequest(profile="smoke", ops=("roi_pooling",)))
    assert "max_elements" not in default.selection          # the default keeps older runs resumable
    with pytest.raises(PlanError, match="--profile must be one of smoke, default, full, networks, limits"):
        select_cases("huge")


@pytest.mark.parametrize("q", [(20, 7, 2, 2, 5, 2, 3), (9, 4, 1, 1, 8, 1, 2), (10, 3, 3, 1, 4, 1, 2), (6, 6, 6, 1, 1, 0, 0),
                               (8, 12, 1, 1, 1, 2, 2), (64, 64, 64, 1, 1, 0, 0)])
def test_window_statistics_loop_over_windows_or_elements_alike(q):
    """A long window (more elements than windows: a global one, 1 x 2^20) is reduced window by
    window, a short one element by element: the same sums, maxima and minima, padding included
    (the limits profile's 1 x 2^20 windows took the element loop a million turns)."""
    from onnx_dml_bench.ops import _sum_evaluations as EV
    from onnx_dml_bench.ops import _sums as SUM
    from onnx_dml_bench.ops._onnx_pool import Axis
    q = Axis(*q)
    a = np.random.default_rng(0).standard_normal((3, 4, q.n))
    c = EV.coords(q)
    for op, fill in ((np.add, 0.0), (np.maximum, -np.inf), (np.minimum, np.inf)):
        want = np.stack([op.reduce(np.where((c[i] >= 0) & (c[i] < q.n), a[..., np.clip(c[i], 0, q.n - 1)], fill), axis=-1)
                         for i in range(q.out)], axis=-1)
        got = SUM._reduce(a, 2, q, op, fill)
        assert got.shape == want.shape and np.allclose(got, want)


def test_a_limit_the_machine_cannot_hold_is_refused_before_any_case_is_made(monkeypatch):
    """--profile limits --max-elements 2^40: refused before the sized profile's cases are generated
    (it once built them, 2.7 GB for 8 s and more, before refusing)."""
    from onnx_dml_bench import plan
    monkeypatch.setattr(plan, "memory", lambda: {"total": 24 << 30, "available": 20 << 30})

    def no_cases(*a, **k):
        raise AssertionError("cases generated for a limit the machine cannot hold")
    monkeypatch.setattr(plan, "select_cases", no_cases)
    with pytest.raises(PlanError, match=r"--max-elements 1,099,511,627,776: one tensor of that many elements is "
                                        r"2048.0 GiB even in float16, more than this machine's 24.0 GiB"):
        RunPlan.build(RunRequest(profile="limits", max_elements=2**40))


def test_the_memory_check_leaves_headroom(monkeypatch):
    """A case whose estimate fits the memory available but not its 60% (machine.MEMORY_SHARE) is
    refused, naming the share and the headroom; one within that share is admitted."""
    from onnx_dml_bench import plan
    from onnx_dml_bench.machine import MEMORY_SHARE
    (case,) = [c for c in sweep_cases("limits", ["max_pooling2"], max_elements=2**32)
               if c.source["boundary"] == "index-2^31"][:1]
    need = case.operator.memory_bytes(case.desc)
    monkeypatch.setattr(plan, "memory", lambda: {"total": 4 * need, "available": int(need / 0.8)})
    with pytest.raises(PlanError, match=r"60% of the .* GiB available, the rest left as headroom"):
        check_memory([case], 2**32)
    monkeypatch.setattr(plan, "memory", lambda: {"total": 4 * need, "available": int(need / MEMORY_SHARE) + 4096})
    check_memory([case], 2**32)
