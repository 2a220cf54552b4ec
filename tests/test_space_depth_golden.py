"""The two worked examples of the DML_SPACE_TO_DEPTH1_OPERATOR_DESC page, typed in literally.

Example 1: BlockSize 2, Order DEPTH_COLUMN_ROW, UINT32, input {1,2,4,6} -> output {1,8,2,3}.
Example 2: BlockSize 2, Order COLUMN_ROW_DEPTH, UINT32, same sizes. Both examples have the same
output; their inputs differ. DEPTH_TO_SPACE1 is the exact inverse: the page's output fed to it with
the same order gives back the page's input.

ONNX graphs: the native SpaceToDepth node (DCR only below opset 28) and Reshape -> Transpose ->
Reshape (both orders). ONNX Runtime's CPU EP has no uint32 SpaceToDepth / DepthToSpace kernel: the
native graphs must be refused there (asserted, not skipped), the decomposed ones must run.
"""
from __future__ import annotations

import numpy as np
import pytest

from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops.space_depth import DEPTH_TO_SPACE1, SPACE_TO_DEPTH1, SpaceDepthDesc

from conftest import ORT_LOADS_OPSET_28, ort_run_model

ort = pytest.importorskip("onnxruntime")

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
