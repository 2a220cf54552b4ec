"""DML_SPACE_TO_DEPTH1_OPERATOR_DESC and DML_DEPTH_TO_SPACE1_OPERATOR_DESC (``ops/space_depth.py``):
their validation rules, properties of their references, the two worked examples of the
DML_SPACE_TO_DEPTH1_OPERATOR_DESC page, typed in literally (golden), the deviations of ONNX Runtime's
CPU EP they declare, and what the default profile covers of them.

The page's examples: Example 1: BlockSize 2, Order DEPTH_COLUMN_ROW, UINT32, input {1,2,4,6} ->
output {1,8,2,3}. Example 2: BlockSize 2, Order COLUMN_ROW_DEPTH, UINT32, same sizes. Both examples
have the same output; their inputs differ. DEPTH_TO_SPACE1 is the exact inverse: the page's output
fed to it with the same order gives back the page's input.

ONNX graphs: the native SpaceToDepth node (DCR only below opset 28) and Reshape -> Transpose ->
Reshape (both orders). ONNX Runtime's CPU EP has no uint32 SpaceToDepth / DepthToSpace kernel: the
native graphs must be refused there (asserted, not skipped), the decomposed ones must run.
"""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops.space_depth import DEPTH_TO_SPACE1, ORT_MISSING_INT_KERNELS, SPACE_TO_DEPTH1, SpaceDepthDesc

from conftest import ORT_LOADS_OPSET_28, Failure, applies, mismatches, onnx_reference_run, ort_run_model, sweep
from op_cases import ort_one
from op_rules import desc, rejects
from op_strategies import PROPS

ort = pytest.importorskip("onnxruntime")

S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]
# DML types each operator supports at its highest feature level (the page's table)


SD = dict(InputSizes=[1, 2, 4, 6], DataType="FLOAT32", BlockSize=2, Order="DEPTH_COLUMN_ROW")
D2S_D = dict(InputSizes=[1, 8, 2, 3], DataType="FLOAT32", BlockSize=2, Order="DEPTH_COLUMN_ROW")


# ---- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("dtype", ["FLOAT64", "INT64", "UINT64"])
def test_space_depth_64_bit_types_need_5_0(op, base, dtype):
    op.validate(desc(op, base, DataType=dtype, FeatureLevel="5.0"))
    rejects(op, base, "DataType", dtype, "DML_FEATURE_LEVEL_5_0", DataType=dtype, FeatureLevel="2.1")


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"])
def test_space_depth_types_at_2_1(op, base, dtype):
    op.validate(desc(op, base, DataType=dtype, FeatureLevel="2.1"))


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_space_depth_needs_feature_level_2_1(op, base):
    rejects(op, base, "FeatureLevel", "2.1", FeatureLevel="1.0")


@pytest.mark.parametrize("sizes", [[1, 2, 5, 6], [1, 2, 4, 5], [1, 2, 3, 3]])
def test_block_size_must_divide_height_and_width(sizes):
    rejects(S2D, SD, "BlockSize", "divide", "height and width", InputSizes=sizes)


def test_space_to_depth_channels_need_not_divide():
    S2D.validate(desc(S2D, SD, InputSizes=[1, 3, 4, 6]))


@pytest.mark.parametrize("channels", [2, 6, 7, 12 + 1])
def test_block_size_squared_must_divide_channels(channels):
    rejects(D2S, D2S_D, "BlockSize", "divide", "channels", InputSizes=[1, channels, 2, 3])


def test_depth_to_space_spatial_sizes_need_not_divide():
    D2S.validate(desc(D2S, D2S_D, InputSizes=[1, 4, 3, 5]))


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_block_size_zero(op, base):
    rejects(op, base, "BlockSize", ">= 1", BlockSize=0)


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("sizes", [[2, 4, 6], [1, 2, 4, 6, 1]])
def test_space_depth_rank_4(op, base, sizes):
    rejects(op, base, "InputTensor.DimensionCount", "4-D", InputSizes=sizes)


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_order_must_be_known(op, base):
    rejects(op, base, "Order", "DEPTH_COLUMN_ROW", Order="ROW_COLUMN_DEPTH")


@pytest.mark.parametrize("spelling", ["DCR", "dcr", "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW", "DEPTH_COLUMN_ROW"])
def test_order_spellings(spelling):
    assert desc(S2D, SD, Order=spelling).Order == "DEPTH_COLUMN_ROW"


# ---- properties of the references ------------------------------------------------------------


@st.composite
def space_depth(draw):
    b = draw(st.integers(1, 3))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    order = draw(st.sampled_from(["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"]))
    dtype = draw(st.sampled_from(["FLOAT32", "UINT8", "INT64", "FLOAT16"]))
    return (n, c, h, w), b, order, dtype


@PROPS
@given(space_depth())
def test_depth_to_space_after_space_to_depth_is_the_identity(params):
    (n, c, h, w), b, order, dtype = params
    dt = DML_TO_NUMPY[dtype]
    x = (np.arange(n * c * h * b * w * b) % 250).astype(dt).reshape(n, c, h * b, w * b)
    sd = SpaceDepthDesc(InputSizes=x.shape, DataType=dtype, BlockSize=b, Order=order)
    S2D.validate(sd)
    y = S2D.reference(Case(S2D, sd, 13), {"X": x})["Y"]
    assert y.shape == S2D.output_shape(sd) == (n, c * b * b, h, w)
    ds = SpaceDepthDesc(InputSizes=y.shape, DataType=dtype, BlockSize=b, Order=order)
    D2S.validate(ds)
    back = D2S.reference(Case(D2S, ds, 13), {"X": y})["Y"]
    assert back.shape == D2S.output_shape(ds) == x.shape
    assert back.dtype == x.dtype and np.array_equal(back, x)
    # and the other way round
    again = S2D.reference(Case(S2D, sd, 13), {"X": back})["Y"]
    assert np.array_equal(again, y)


@PROPS
@given(space_depth())
def test_space_to_depth_channel_formula(params):
    """Output channel (by*B + bx)*C + c (DCR) or c*B*B + by*B + bx (CRD) holds input (c, h*B+by, w*B+bx)."""
    (n, c, h, w), b, order, _ = params
    x = np.arange(n * c * h * b * w * b, dtype=np.int64).reshape(n, c, h * b, w * b)
    sd = SpaceDepthDesc(InputSizes=x.shape, DataType="INT64", BlockSize=b, Order=order)
    y = S2D.reference(Case(S2D, sd, 13), {"X": x})["Y"]
    for cc, by, bx in itertools.product(range(c), range(b), range(b)):
        oc = (by * b + bx) * c + cc if order == "DEPTH_COLUMN_ROW" else cc * b * b + by * b + bx
        assert np.array_equal(y[:, oc], x[:, cc, by::b, bx::b])


# ---- the page, literally ---------------------------------------------------------------------

EXAMPLE1_INPUT = [[[[0, 18, 1, 19, 2, 20],
                    [36, 54, 37, 55, 38, 56],
                    [3, 21, 4, 22, 5, 23],
                    [39, 57, 40, 58, 41, 59]],
                   [[9, 27, 10, 28, 11, 29],
                    [45, 63, 46, 64, 47, 65],
                    [12, 30, 13, 31, 14, 32],
                    [48, 66, 49, 67, 50, 68]]]]

EXAMPLE2_INPUT = [[[[0, 9, 1, 10, 2, 11],
                    [18, 27, 19, 28, 20, 29],
                    [3, 12, 4, 13, 5, 14],
                    [21, 30, 22, 31, 23, 32]],
                   [[36, 45, 37, 46, 38, 47],
                    [54, 63, 55, 64, 56, 65],
                    [39, 48, 40, 49, 41, 50],
                    [57, 66, 58, 67, 59, 68]]]]

# the same OutputTensor in both examples
PAGE_OUTPUT = [[[[0, 1, 2],
                 [3, 4, 5]],
                [[9, 10, 11],
                 [12, 13, 14]],
                [[18, 19, 20],
                 [21, 22, 23]],
                [[27, 28, 29],
                 [30, 31, 32]],
                [[36, 37, 38],
                 [39, 40, 41]],
                [[45, 46, 47],
                 [48, 49, 50]],
                [[54, 55, 56],
                 [57, 58, 59]],
                [[63, 64, 65],
                 [66, 67, 68]]]]

EXAMPLES = {
    "DEPTH_COLUMN_ROW": EXAMPLE1_INPUT,
    "COLUMN_ROW_DEPTH": EXAMPLE2_INPUT,
}
ORDERS = list(EXAMPLES)


def page_input(order: str) -> np.ndarray:
    return np.array(EXAMPLES[order], dtype=np.uint32)


def page_output() -> np.ndarray:
    return np.array(PAGE_OUTPUT, dtype=np.uint32)


def s2d_case(order: str, form: str, opset: int = 13, dtype: str = "UINT32") -> Case:
    desc = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType=dtype, BlockSize=2, Order=order)
    flat = tuple(int(v) for v in page_input(order).ravel())
    return Case(SPACE_TO_DEPTH1, desc, opset, make_variant(form=form), "explicit", 0, (("X", flat),))


def d2s_case(order: str, form: str, opset: int = 13, dtype: str = "UINT32") -> Case:
    desc = SpaceDepthDesc(InputSizes=(1, 8, 2, 3), DataType=dtype, BlockSize=2, Order=order)
    flat = tuple(int(v) for v in page_output().ravel())
    return Case(DEPTH_TO_SPACE1, desc, opset, make_variant(form=form), "explicit", 0, (("X", flat),))


def run_ort(case: Case) -> np.ndarray:
    return ort_run_model(case.operator.to_onnx(case), {"X": case.inputs()["X"]})[0]


# ---- the page's data itself --------------------------------------------------------------------

def test_page_shapes_and_type():
    for order in ORDERS:
        assert page_input(order).shape == (1, 2, 4, 6)
    assert page_output().shape == (1, 8, 2, 3)
    d = s2d_case("DEPTH_COLUMN_ROW", "native").desc
    SPACE_TO_DEPTH1.validate(d)
    # the page states DepthToSpace's sizes for SpaceToDepth's output by mistake; correct is
    # {N, C*B*B, H/B, W/B}
    assert SPACE_TO_DEPTH1.output_shape(d) == (1, 8, 2, 3)


# ---- reference ---------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_reference_gives_page_output(order):
    case = s2d_case(order, "native")
    y = SPACE_TO_DEPTH1.reference(case, case.inputs())["Y"]
    assert y.dtype == np.uint32
    np.testing.assert_array_equal(y, page_output())


@pytest.mark.parametrize("order", ORDERS)
def test_depth_to_space_reference_is_exact_inverse(order):
    case = d2s_case(order, "native")
    DEPTH_TO_SPACE1.validate(case.desc)
    assert DEPTH_TO_SPACE1.output_shape(case.desc) == (1, 2, 4, 6)
    x = DEPTH_TO_SPACE1.reference(case, case.inputs())["Y"]
    assert x.dtype == np.uint32
    np.testing.assert_array_equal(x, page_input(order))


def test_the_two_orders_differ_on_the_page_input():
    """Guard: the examples discriminate the orders (each order's input maps elsewhere under the other)."""
    a = SPACE_TO_DEPTH1.reference(s2d_case("COLUMN_ROW_DEPTH", "native"),
                                  {"X": page_input("DEPTH_COLUMN_ROW")})["Y"]
    assert not np.array_equal(a, page_output())


# ---- ONNX graphs on ONNX Runtime's CPU EP ------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_decomposed_graph_on_ort_gives_page_output(order):
    case = s2d_case(order, "decomposed")
    assert SPACE_TO_DEPTH1.expressible(case) is None
    types = [n.op_type for n in case.operator.to_onnx(case).graph.node]
    assert types == ["Reshape", "Transpose", "Reshape"]
    y = run_ort(case)
    assert y.dtype == np.uint32
    np.testing.assert_array_equal(y, page_output())


def test_native_dcr_uint32_is_refused_by_ort():
    """The native DCR graph is valid ONNX (opset 13), but ORT's CPU EP has no uint32 kernel."""
    case = s2d_case("DEPTH_COLUMN_ROW", "native", opset=13)
    assert SPACE_TO_DEPTH1.expressible(case) is None
    m = case.operator.to_onnx(case)
    assert [n.op_type for n in m.graph.node] == ["SpaceToDepth"]
    with pytest.raises(Exception, match=r"(?i)NOT_IMPLEMENTED.*SpaceToDepth"):
        run_ort(case)


def test_native_dcr_on_ort_gives_page_output_as_float32():
    """Where ORT has a kernel: the page's (small integer) values carried as FLOAT32."""
    case = s2d_case("DEPTH_COLUMN_ROW", "native", dtype="FLOAT32")
    y = ort_run_model(case.operator.to_onnx(case), {"X": page_input("DEPTH_COLUMN_ROW").astype(np.float32)})[0]
    np.testing.assert_array_equal(y, page_output().astype(np.float32))


def test_native_crd_needs_opset_28():
    below = s2d_case("COLUMN_ROW_DEPTH", "native", opset=13)
    assert "opset 28" in SPACE_TO_DEPTH1.expressible(below)
    case = s2d_case("COLUMN_ROW_DEPTH", "native", opset=28)
    assert SPACE_TO_DEPTH1.expressible(case) is None
    node = case.operator.to_onnx(case).graph.node[0]
    assert node.op_type == "SpaceToDepth"
    assert {a.name: a.s for a in node.attribute}.get("mode") == b"CRD"
    if ORT_LOADS_OPSET_28:
        # 1.32: no uint32 SpaceToDepth-28 CPU kernel, so the node runs as its ONNX function body
        np.testing.assert_array_equal(run_ort(case), page_output())
    else:
        with pytest.raises(Exception, match=r"IR version: 14"):    # 1.31 loads IR <= 13
            run_ort(case)


@pytest.mark.parametrize("order,opset", [("DEPTH_COLUMN_ROW", 13), ("COLUMN_ROW_DEPTH", 28)])
def test_native_graphs_on_onnx_reference_give_page_output(order, opset):
    """The native graphs ORT cannot run are still right: onnx.reference runs them."""
    from onnx.reference import ReferenceEvaluator
    case = s2d_case(order, "native", opset=opset)
    y = ReferenceEvaluator(case.operator.to_onnx(case)).run(None, {"X": page_input(order)})[0]
    np.testing.assert_array_equal(y, page_output())


# ---- DepthToSpace1 graphs ------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_depth_to_space_decomposed_on_ort_inverts_the_page(order):
    case = d2s_case(order, "decomposed")
    y = run_ort(case)
    assert y.dtype == np.uint32
    np.testing.assert_array_equal(y, page_input(order))


@pytest.mark.parametrize("order", ORDERS)
def test_depth_to_space_native_uint32_is_refused_by_ort(order):
    case = d2s_case(order, "native")
    assert DEPTH_TO_SPACE1.expressible(case) is None
    with pytest.raises(Exception, match=r"(?i)NOT_IMPLEMENTED.*DepthToSpace"):
        run_ort(case)


@pytest.mark.parametrize("order", ORDERS)
def test_depth_to_space_native_on_ort_inverts_the_page_as_float32(order):
    case = d2s_case(order, "native", dtype="FLOAT32")
    y = ort_run_model(case.operator.to_onnx(case), {"X": page_output().astype(np.float32)})[0]
    np.testing.assert_array_equal(y, page_input(order).astype(np.float32))


@pytest.mark.parametrize("order", ORDERS)
def test_depth_to_space_native_on_onnx_reference_inverts_the_page(order):
    from onnx.reference import ReferenceEvaluator
    case = d2s_case(order, "native")
    y = ReferenceEvaluator(case.operator.to_onnx(case)).run(None, {"X": page_output()})[0]
    np.testing.assert_array_equal(y, page_input(order))


# ---- deviations: ONNX Runtime's CPU EP -------------------------------------------------------


@pytest.mark.parametrize("op", [S2D, D2S], ids=["SpaceToDepth", "DepthToSpace"])
@pytest.mark.parametrize("dtype", ["FLOAT64", "FLOAT32", "FLOAT16", "INT8", "UINT8", *ORT_MISSING_INT_KERNELS])
def test_ort_space_depth_kernels_by_type(op, dtype):
    sizes = (1, 2, 4, 6) if op is S2D else (1, 8, 2, 3)
    x = np.arange(48) % 100
    cases = {}
    for form in ("native", "decomposed"):
        d = SpaceDepthDesc(InputSizes=sizes, DataType=dtype, BlockSize=2, Order="DEPTH_COLUMN_ROW")
        cases[form] = Case(op, d, 13, make_variant(form=form), "explicit", 0, (("X", tuple(int(v) for v in x)),))
    native = ort_one(cases["native"])
    key = f"ort-{op.onnx_ops[0].lower()}-int-kernels"
    if dtype in ORT_MISSING_INT_KERNELS:
        assert applies(key, cases["native"])
        assert isinstance(native, Failure) and "NOT_IMPLEMENTED" in native.error, native
    else:
        assert not applies(key, cases["native"])
        assert not mismatches(cases["native"], native)
    assert not applies(key, cases["decomposed"])
    assert not mismatches(cases["decomposed"], ort_one(cases["decomposed"]))


def test_ort_loads_opset_28_from_1_32():
    d = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType="FLOAT32", BlockSize=2, Order="COLUMN_ROW_DEPTH")
    case = Case(S2D, d, 28, make_variant(form="native"), "explicit", 0, (("X", tuple(range(48))),))
    assert applies("ort-opset-28", case) == (not ORT_LOADS_OPSET_28)
    m = S2D.to_onnx(case)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 14
    got = ort_one(case)
    from conftest import ort_session
    if ORT_LOADS_OPSET_28:
        assert not isinstance(got, Failure), got
        assert not mismatches(case, got)
        # float16 has no SpaceToDepth-28 CPU kernel: the node runs as its ONNX function body, and agrees
        f16 = Case(S2D, d.replace(DataType="FLOAT16"), 28, make_variant(form="native"), "explicit", 0,
                   (("X", tuple(range(48))),))
        assert not mismatches(f16, ort_one(f16))
    else:
        assert isinstance(got, Failure) and "IR version: 14" in got.error and "max supported IR version: 13" in got.error
        m.ir_version = 13                        # even so, opset 28 itself is refused
        with pytest.raises(Exception, match="(?i)opset"):
            ort_session(m)
    # onnx.reference runs it, and agrees
    assert not mismatches(case, onnx_reference_run(case))


def test_ort_opset_28_deviation_follows_the_installed_release(monkeypatch):
    import onnxruntime
    d = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType="FLOAT32", BlockSize=2, Order="COLUMN_ROW_DEPTH")
    case = Case(S2D, d, 28, make_variant(form="native"), "explicit", 0, (("X", tuple(range(48))),))
    at_13 = Case(S2D, d.replace(Order="DEPTH_COLUMN_ROW"), 13, make_variant(form="native"), "explicit", 0,
                 (("X", tuple(range(48))),))
    for version, refused in (("1.31.1", True), ("1.32.0", False), ("1.33.0.dev20260101", False)):
        monkeypatch.setattr(onnxruntime, "__version__", version)
        assert applies("ort-opset-28", case) == refused, version
        assert not applies("ort-opset-28", at_13)


# ---- coverage of the default profile ---------------------------------------------------------


@pytest.mark.parametrize("key", ["space_to_depth1", "depth_to_space1"])
def test_space_depth_coverage(key):
    cs = sweep("default", key)
    combos = {(c.dtype, c.desc.Order, c.v.get("form")) for c in cs}
    for dt in registry.OPERATORS[key].types_by_level["5.0"]:
        for order in ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"):
            for form in ("native", "decomposed"):
                assert (dt, order, form) in combos, (dt, order, form)
    assert {c.desc.BlockSize for c in cs} >= {1, 2, 3, 4}
    assert any(c.desc.InputSizes[0] > 1 for c in cs)
    if key == "space_to_depth1":
        crd_native = [c for c in cs if c.desc.Order == "COLUMN_ROW_DEPTH" and c.v["form"] == "native"]
        assert crd_native and all(c.opset == 28 for c in crd_native)

