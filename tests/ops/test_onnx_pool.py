"""ONNX MaxPool / AveragePool semantics (ops/_onnx_pool.py) against answers worked out by hand from
the ONNX text's formulas, against ONNX's own node tests, and the rules by which the bench refuses
or flags graphs the text leaves undefined."""
from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _pool_family as PF
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.base import DescriptorError

from conftest import expressible, inputs_of, sweep

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
X5 = np.arange(5, dtype=np.float32).reshape(1, 1, 5)      # [0 1 2 3 4]
X6 = np.arange(6, dtype=np.float32).reshape(1, 1, 6)


def A(op, opset=22, **kw):
    kw.setdefault("strides", (1,))
    return O.Attrs(op, opset, **kw)


# (name, x, attrs, Y, Indices or None, open points): every row worked out from the ONNX formulas
TABLE = [
    # floor: (5 - 2) // 2 + 1 = 2 windows [0,1] [2,3]
    ("max floor", X5, A("MaxPool", kernel=(2,), strides=(2,)), [1, 3], [1, 3], []),
    # ceil: ceil((5 - 2) / 2) + 1 = 3; third window starts at 4 < 5 (inside): [4, past end]
    ("max ceil", X5, A("MaxPool", kernel=(2,), strides=(2,), ceil_mode=1), [1, 3, 4], [1, 3, 4], []),
    # count_include_pad 0, ceil: [0,1]/2 [2,3]/2 [4]/1
    ("avg ceil cip0", X5, A("AveragePool", kernel=(2,), strides=(2,), ceil_mode=1), [0.5, 2.5, 4.0], None, []),
    # count_include_pad 1, ceil, no pads: the third window's second position is past the (zero) end
    # pad: not a pad pixel -> 4/1
    ("avg ceil cip1 overhang", X5, A("AveragePool", kernel=(2,), strides=(2,), ceil_mode=1, count_include_pad=1),
     [0.5, 2.5, 4.0], None, ["ceil-overhang-divisor"]),
    # pads 1/1, k3 s2: (7 - 3) // 2 + 1 = 3 windows [-1,0,1] [1,2,3] [3,4,5]; cip1: /3 each
    ("avg pads cip1", X5, A("AveragePool", kernel=(3,), strides=(2,), pads=(1, 1), count_include_pad=1),
     [1 / 3, 2.0, 7 / 3], None, []),
    # cip0: (0+1)/2, (1+2+3)/3, (3+4)/2
    ("avg pads cip0", X5, A("AveragePool", kernel=(3,), strides=(2,), pads=(1, 1)), [0.5, 2.0, 3.5], None, []),
    # k2 s3 pads 1/1 ceil, opset 22: ceil((7 - 2) / 3) + 1 = 3, third window starts at 3*2 - 1 = 5 >= 5
    # (in the right padding): ignored -> 2 windows [-1,0] [2,3]; cip1: 0/2, 5/2
    ("avg ceil last window ignored", X5, A("AveragePool", kernel=(2,), strides=(3,), pads=(1, 1), ceil_mode=1,
                                           count_include_pad=1), [0.0, 2.5], None, []),
    # dilation 2, k2 s1: eff 3, (5 - 3) + 1 = 3 windows [0,2] [1,3] [2,4]
    ("max dilation", X5, A("MaxPool", kernel=(2,), dilations=(2,)), [2, 3, 4], [2, 3, 4], []),
    # dilation 2, k2 s2, ceil, In 6: ceil((6 - 3) / 2) + 1 = 3 windows [0,2] [2,4] [4,(6)]; cip1: 6 is
    # past the end pad -> 4/1
    ("avg dilation ceil cip1", X6, A("AveragePool", opset=19, kernel=(2,), strides=(2,), dilations=(2,), ceil_mode=1,
                                     count_include_pad=1), [1.0, 3.0, 4.0], None, ["ceil-overhang-divisor"]),
    # SAME_UPPER k2 s2 In 5: out ceil(5/2) = 3, pad (3-1)*2 + 2 - 5 = 1 -> begin 0, end 1: [0,1] [2,3] [4,p]
    ("max same_upper", X5, A("MaxPool", kernel=(2,), strides=(2,), auto_pad="SAME_UPPER"), [1, 3, 4], [1, 3, 4], []),
    ("avg same_upper cip0", X5, A("AveragePool", kernel=(2,), strides=(2,), auto_pad="SAME_UPPER"),
     [0.5, 2.5, 4.0], None, []),
    ("avg same_upper cip1", X5, A("AveragePool", kernel=(2,), strides=(2,), auto_pad="SAME_UPPER", count_include_pad=1),
     [0.5, 2.5, 2.0], None, []),
    # SAME_LOWER: begin 1, end 0: [p,0] [1,2] [3,4]
    ("max same_lower", X5, A("MaxPool", kernel=(2,), strides=(2,), auto_pad="SAME_LOWER"), [0, 2, 4], [0, 2, 4], []),
    ("avg same_lower cip1", X5, A("AveragePool", kernel=(2,), strides=(2,), auto_pad="SAME_LOWER", count_include_pad=1),
     [0.0, 1.5, 3.5], None, []),
    # SAME with ceil_mode: still ceil(5/2) = 3 (the text's SAME formula under ceil_mode)
    ("max same_upper ceil", X5, A("MaxPool", kernel=(2,), strides=(2,), auto_pad="SAME_UPPER", ceil_mode=1),
     [1, 3, 4], [1, 3, 4], []),
    # VALID with ceil_mode, In 6: ceil((6 - 2 + 1) / 2) = 3 = floor size: [0,1] [2,3] [4,5]
    ("max valid ceil", X6, A("MaxPool", kernel=(2,), strides=(2,), auto_pad="VALID", ceil_mode=1), [1, 3, 5], [1, 3, 5], []),
    # SAME_UPPER k1 s3 In 5: out 2, pad (2-1)*3 + 1 - 5 = -1 -> clamped to 0: [0] [3]
    ("max same negative pad", X5, A("MaxPool", kernel=(1,), strides=(3,), auto_pad="SAME_UPPER"), [0, 3], [0, 3],
     ["same-negative-pad"]),
    # AveragePool-11, SAME_UPPER k2 s2 In 5 without ceil_mode: the opset-11 text's floor(5/2) = 2 contradicts
    # its auto_pad attribute (ceil(5/2) = 3): the bench gives 3 windows and flags it
    ("avg11 same floor text", X5, A("AveragePool", opset=11, kernel=(2,), strides=(2,), auto_pad="SAME_UPPER"),
     [0.5, 2.5, 4.0], None, ["avgpool11-auto-pad-floor"]),
]

# storage_order: X 1x1x2x3 [[0 1 2] [3 4 5]], k 2x2 s1: maxima 4 at (1,1) and 5 at (1,2);
# row-major h*3 + w: 4, 5; column-major h + 2*w: 3, 5
X23 = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
TABLE += [
    ("max storage_order 0", X23, O.Attrs("MaxPool", 12, kernel=(2, 2)), [[4, 5]], [[4, 5]], []),
    ("max storage_order 1", X23, O.Attrs("MaxPool", 12, kernel=(2, 2), storage_order=1), [[4, 5]], [[3, 5]], []),
]


@pytest.mark.parametrize("name,x,attrs,y,idx,points", TABLE, ids=[r[0] for r in TABLE])
def test_hand_computed_onnx_answers(name, x, attrs, y, idx, points):
    out = O.run(x, attrs, want_indices=idx is not None)
    np.testing.assert_allclose(out["Y"].reshape(np.shape(y)), np.array(y, dtype=np.float32), rtol=1e-6)
    assert out["Y"].shape[2:] == np.shape(y)[-(x.ndim - 2):] or out["Y"].size == np.size(y)
    if idx is not None:
        assert out["Indices"].reshape(np.shape(idx)).tolist() == idx
    assert O.check(attrs, x.shape) == sorted(points)


def test_ceil_last_window_is_dropped_and_an_open_point_before_22():
    """pads 1/1, k2, s3 on 5 elements: the ceil formula gives 3 windows, the third starts at 5,
    in the end padding. Opset 22 drops it (the text); before 22 the reference drops it too (what
    opset 22 states, ONNX Runtime and PyTorch do) and the graph touches open point
    ceil-last-window (ONNX shape inference keeps it)."""
    for opset in (19, 22):
        a = A("AveragePool", opset=opset, kernel=(2,), strides=(3,), pads=(1, 1), ceil_mode=1, count_include_pad=1)
        assert O.run(X5, a)["Y"].ravel().tolist() == [0.0, 2.5]
        assert ("ceil-last-window" in O.check(a, X5.shape)) == (opset < 22)


def test_max_pool_window_without_input_element_is_refused():
    # pads 2/0, k2: the first window [-2,-1] is padding only
    with pytest.raises(O.SpecError, match="no element of the input"):
        O.run(X5, A("MaxPool", kernel=(2,), pads=(2, 0)))
    with pytest.raises(O.SpecError, match="divisor of 0"):
        O.run(X5, A("AveragePool", kernel=(2,), pads=(2, 0)))
    # count_include_pad=1: 0 / 2 pad pixels = 0
    assert O.run(X5, A("AveragePool", kernel=(2,), pads=(2, 0), count_include_pad=1))["Y"].ravel()[0] == 0


# ---- validation: the rules of issue point 6 -------------------------------------------------------

def pool_desc(op, **kw):
    base = dict(InputSizes=(2, 1, 1, 2), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(2, 1),
                StartPadding=(1, 0), EndPadding=(1, 0), Dilations=(2, 1))
    return op.Desc(**{**base, **kw})


def test_max_pool_dilated_window_entirely_in_padding_is_rejected():
    # X 2x1x1x2, window (2,1) dilated (2,1), pads 1/1 on H: the one window on H covers rows -1 and 1: padding only
    with pytest.raises(DescriptorError) as ei:
        MP.validate(pool_desc(MP))
    assert ei.value.field == "StartPadding" and "entirely in padding" in str(ei.value)
    assert "at least one element of the unpadded input" in str(ei.value)


def test_average_pool_window_entirely_in_padding():
    with pytest.raises(DescriptorError, match="divisor would be 0"):
        AP.validate(pool_desc(AP))
    d = pool_desc(AP, IncludePadding=True)
    AP.validate(d)                                   # defined: sum 0 over the whole window
    case = Case(AP, d, 19, make_variant(), "explicit", 0, (("X", (1.0, 2.0, 3.0, 4.0)),))
    assert AP.reference(case, case.inputs())["Y"].ravel().tolist() == [0.0] * 4
    assert AP.expected(case, case.inputs())["Y"].ravel().tolist() == [0.0] * 4


@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
def test_same_with_stride_above_window_is_flagged(op):
    d = PF.geometry(op.Desc, (1, 1, 6, 6), (2, 2), (3, 3), None, None, (1, 1), {"auto_pad": "SAME_UPPER"})
    case = Case(op, d, op.default_opset, make_variant(auto_pad="SAME_UPPER"), "explicit", 0,
                (("X", tuple(float(v) for v in range(36))),))
    op.validate(d)
    op.check_variant(case)
    assert d.StartPadding == (0, 0) and d.EndPadding == (0, 0)
    assert "same-negative-pad" in op.open_points(case, case.inputs())
    assert "same-negative-pad" in op.open_point_texts


# ---- cases: every graph judged against the ONNX text; images against DirectML too ---------------------

@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
def test_onnx_and_dml_agree_on_every_image_case(op):
    """On the default sweep, where the graph is the direct image of the descriptor, the ONNX answer
    and the DirectML answer are the same bits, except where the case names the difference
    (open point onnx-vs-dml:<output>): there are none today."""
    images = [c for c in expressible(sweep("default", op.key)) if op.dml_image(c) is None]
    assert len(images) > 300
    named, differ = [], []
    for c in images:
        x = inputs_of(c)
        if any(p.startswith("onnx-vs-dml:") for p in op.open_points(c, x)):
            named.append(c.id)
            continue
        exp, ref = op.expected(c, x), op.reference(c, x)
        for k in ref:
            if exp[k].shape != ref[k].shape or not np.array_equal(exp[k].view(np.uint8) if exp[k].dtype.kind == "f"
                                                                 else exp[k], ref[k].view(np.uint8)
                                                                 if ref[k].dtype.kind == "f" else ref[k]):
                differ.append(f"{c.id}: {k}")
    assert not differ, differ[:10]
    assert named == []


def test_grid_covers_the_attribute_grid_at_every_opset():
    for op, opsets in ((MP, (8, 10, 11, 12, 22)), (AP, (7, 10, 11, 19, 22))):
        cases = sweep("default", op.key)
        for o in opsets:
            at = [c for c in cases if c.opset == o]
            got = {(c.v.get("auto_pad", "NOTSET"), c.v.get("ceil_mode", 0)) for c in at}
            # VALID with ceil_mode is refused where it would matter (open point auto-pad-ceil-mode)
            want = {(ap, cm) for ap in P.AUTO_PAD for cm in ((0, 1) if o >= 10 else (0,))} - {("VALID", 1)}
            assert want <= got, (op.key, o, want - got)
            if o >= (10 if op is MP else 19):
                assert any(any(d > 1 for d in c.desc.Dilations) for c in at), (op.key, o)
            if op is MP:
                assert {c.v.get("storage_order", 0) for c in at if c.desc.OutputIndicesDataType} == {0, 1}
            else:
                assert {c.desc.IncludePadding for c in at} == {False, True}
    # the combinations once left out (count_include_pad with a ceil_mode overhang) are built now
    assert any(AP.dml_image(c) is not None and c.desc.IncludePadding and c.v.get("ceil_mode")
               for c in sweep("default", AP.key))


# ---- ONNX's own node tests ---------------------------------------------------------------------------

def _node_tests():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [t for t in collect_testcases(None) if t.model.graph.node[0].op_type in ("MaxPool", "AveragePool")]


NODE_TESTS = _node_tests()
#: node tests whose expected outputs depart from exact arithmetic, with the reason
ROUNDED = {"test_averagepool_2d_ceil_last_window_starts_on_pad":
           "ONNX's expected outputs are written to 4 decimals (e.g. 0.1511 for 0.15105554)"}


def node_case(t) -> tuple[Case, np.ndarray, list[np.ndarray], dict]:
    """The bench case of a node test: the same attributes as a descriptor and an ONNX-side variant
    (a 1-D test becomes 2-D with a height of 1: the same windows)."""
    n = t.model.graph.node[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    x = t.data_sets[0][0][0]
    outs = list(t.data_sets[0][1])
    nd = x.ndim - 2
    k = list(attrs["kernel_shape"])
    s = list(attrs.get("strides", [1] * nd))
    dil = list(attrs.get("dilations", [1] * nd))
    pads = list(attrs.get("pads", [0] * 2 * nd))
    sp, ep = pads[:nd], pads[nd:]
    if nd == 1:
        x = x.reshape(x.shape[0], x.shape[1], 1, x.shape[2])
        outs = [o.reshape(o.shape[0], o.shape[1], 1, o.shape[2]) for o in outs]
        k, s, dil, sp, ep = [1] + k, [1] + s, [1] + dil, [0] + sp, [0] + ep
    variant = {key: attrs[key] for key in ("auto_pad", "ceil_mode", "storage_order")
               if key in attrs and attrs[key] not in (0, "NOTSET")}
    dt = {np.dtype(np.float32): "FLOAT32", np.dtype(np.uint8): "UINT8"}[x.dtype]
    op = MP if n.op_type == "MaxPool" else AP
    fields = dict(DataType=dt)
    if op is MP:
        fields["OutputIndicesDataType"] = "UINT64" if len(n.output) > 1 else None
    else:
        fields["IncludePadding"] = bool(attrs.get("count_include_pad", 0))
    d = PF.geometry(op.Desc, x.shape, k, s, sp, ep, dil, variant).replace(**fields)
    case = Case(op, d, t.model.opset_import[0].version, make_variant(**variant), "explicit", 0,
                (("X", tuple(x.ravel().tolist())),))
    return case, x, outs, attrs


def test_node_tests_are_all_here():
    assert len(NODE_TESTS) == 39
    assert any(t.name == "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True"
               for t in NODE_TESTS)


@pytest.mark.parametrize("t", NODE_TESTS, ids=lambda t: t.name)
def test_onnx_node_test_judged_by_expected(t):
    case, x, outs, attrs = node_case(t)
    op = case.operator
    op.validate(case.desc)
    op.check_variant(case)
    assert op.expressible(case) is None                   # none left out as NOT_EXPRESSIBLE
    built = {a.name: onnx.helper.get_attribute_value(a) for a in op.build(case, "").nodes[0].attribute}
    built = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in built.items()}
    for key in ("kernel_shape", "strides", "dilations", "auto_pad", "ceil_mode", "count_include_pad",
                "storage_order"):
        if x.ndim - 2 == len(attrs["kernel_shape"]):        # not a 1-D test lifted to 2-D
            default = {"auto_pad": "NOTSET"}.get(key, [1] * len(attrs["kernel_shape"])
                                                 if key in ("strides", "dilations") else 0)
            assert built.get(key, default) == attrs.get(key, default), key
    got = op.expected(case, {"X": x})
    rtol = 1e-3 if t.name in ROUNDED else 1e-5
    for name, want in zip(op.outputs(case), outs):
        assert got[name].shape == want.shape, name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got[name], want, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(got[name], want)
    # and the ONNX text's semantics on the node's own attributes (end pads included) agree too
    own = O.run(t.data_sets[0][0][0], O.Attrs.from_node(t.model.graph.node[0].op_type, case.opset, attrs),
                want_indices=len(outs) > 1)
    for name, want in zip(own, t.data_sets[0][1]):
        np.testing.assert_allclose(own[name].astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol)
