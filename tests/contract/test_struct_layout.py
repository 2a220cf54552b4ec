"""An operator declares its DirectML struct once (``Operator.layout``, ``ops/_struct.py``) and
everything that writes the struct down follows: the bundle's DxDispatch model and C++ text, the
direct harness's request line, input types and output slots, and the report's struct text.

* every operator's layout is its struct as directml.h declares it, which the operator writes down
  in its own file (``Operator.directml_h``: the members' text and the numbers of its operator type
  and enum constants); the numbers of operators that share an enum agree;
* the harness's packing rule (natural alignment, mirrored by ``_struct.offsets``) is a C compiler's
  layout of those structs (tests/dml/test_direct.py checks the harness itself against it);
* an operator added as one module (DML_ROI_ALIGN1, ops/roi_align/: an integer BatchIndicesTensor,
  a third input, FLOAT members, two enums, a BOOL) comes out right everywhere, no struct or number
  of it written anywhere else.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from onnx_dml_bench.bundle import dxdispatch as DX
from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case
from onnx_dml_bench.dml.direct import runner as R
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops._struct import (Bool, DirectmlH, Enum, Field, Float, Input, Int, Ints, Output, Size2D, Uint,
                                        Uints, declaration, offsets)
from onnx_dml_bench.report import data as D

#: A struct no operator of the bench has (INT arrays), as directml.h (DML_TARGET_VERSION 0x6400) declares it
SLICE1_STRUCT = """
        const DML_TENSOR_DESC* InputTensor;
        const DML_TENSOR_DESC* OutputTensor;
        UINT DimensionCount;
        const UINT* InputWindowOffsets;
        const UINT* InputWindowSizes;
        const INT* InputWindowStrides;"""


def structs() -> dict[str, str]:
    """Struct name -> its members as directml.h declares them: every registered operator's (from its
    own file) and SLICE1's."""
    out = {op.dml_name: op.directml_h.struct for op in registry.OPERATORS.values()}
    out["DML_SLICE1_OPERATOR_DESC"] = SLICE1_STRUCT
    return out


def members(struct: str) -> list[tuple[str, str, bool]]:
    """(C type, name, _Maybenull_) of a declaration's members."""
    return DirectmlH(structs()[struct], {}).members()


def sample(op):
    return op.sweep("smoke")[0]


# ----------------------------------------------------------------------------------------------
# An operator added as one module: DML_ROI_ALIGN1 (ops/roi_align/), whose struct and numbers only
# its own module writes down
# ----------------------------------------------------------------------------------------------

ROI_ALIGN1 = registry.get("roi_align1")
ROI_ALIGN1_DESC = ROI_ALIGN1.Desc(InputSizes=(1, 2, 4, 4), RoiSizes=(3, 4), DataType="FLOAT32", OutputSize=(2, 2),
                                  BatchIndicesDataType="UINT32", BatchIndicesSizes=(1, 1, 1, 3), ReductionFunction="MAX",
                                  SpatialScaleX=0.5, SpatialScaleY=0.25, InputPixelOffset=0.5, OutputPixelOffset=-0.5,
                                  MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=4, AlignRegionsToCorners=True)


@pytest.fixture
def roi_align1():
    return ROI_ALIGN1


#: the new operator's struct as the report shows it
ROI_ALIGN1_TEXT = """\
// DML_FEATURE_LEVEL_4_0 (descriptor validated at this level)
struct DML_ROI_ALIGN1_OPERATOR_DESC {
    InputTensor             = { DataType = DML_TENSOR_DATA_TYPE_FLOAT32, Sizes = {1, 2, 4, 4} };
    ROITensor               = { DataType = DML_TENSOR_DATA_TYPE_FLOAT32, Sizes = {3, 4} };
    BatchIndicesTensor      = { DataType = DML_TENSOR_DATA_TYPE_UINT32, Sizes = {1, 1, 1, 3} };
    OutputTensor            = { DataType = DML_TENSOR_DATA_TYPE_FLOAT32 };
    ReductionFunction       = DML_REDUCE_FUNCTION_MAX;
    InterpolationMode       = DML_INTERPOLATION_MODE_LINEAR;
    SpatialScaleX           = 0.5;
    SpatialScaleY           = 0.25;
    InputPixelOffset        = 0.5;
    OutputPixelOffset       = -0.5;
    OutOfBoundsInputValue   = 0;
    MinimumSamplesPerOutput = 1;
    MaximumSamplesPerOutput = 4;
    AlignRegionsToCorners   = TRUE;
};"""


def test_a_new_operator_is_one_declaration(roi_align1):
    case = roi_align1.make_case(ROI_ALIGN1_DESC)
    inputs = case.inputs()
    # the DxDispatch model: every member, the integer tensor typed as such and bound, enums by name
    model = DX.dxdispatch_model(case, inputs)
    assert DX.check_model(model, {"DML_OPERATOR_ROI_ALIGN1": [n for _, n, _ in members(roi_align1.dml_name)]}) == []
    assert DX.binding_sizes_ok(model) == []
    desc = model["dispatchables"]["roi_align1"]["desc"]
    assert model["dispatchables"]["roi_align1"]["type"] == "DML_OPERATOR_ROI_ALIGN1"
    assert desc["BatchIndicesTensor"] == {"DataType": "UINT32", "Sizes": [1, 1, 1, 3]}
    assert desc["ROITensor"] == {"DataType": "FLOAT32", "Sizes": [3, 4]}
    assert desc["ReductionFunction"] == "DML_REDUCE_FUNCTION_MAX" and desc["AlignRegionsToCorners"] is True
    assert desc["SpatialScaleY"] == 0.25 and desc["MaximumSamplesPerOutput"] == 4
    assert model["resources"]["batch_indices"] == {"initialValuesDataType": "UINT32", "initialValues": [0, 0, 0]}
    assert model["commands"][0]["bindings"] == {"InputTensor": "X", "ROITensor": "rois",
                                                "BatchIndicesTensor": "batch_indices", "OutputTensor": "Y"}
    # the C++ text
    cpp = DX.cpp_struct(case)
    for line in ("static const DML_ROI_ALIGN1_OPERATOR_DESC opDesc = {", "    DML_TENSOR_DATA_TYPE_UINT32,  // DataType",
                 "static const UINT batchIndicesTensorSizes[4] = { 1, 1, 1, 3 };",
                 "    DML_REDUCE_FUNCTION_MAX,  // ReductionFunction", "    0.25f,  // SpatialScaleY",
                 "    -0.5f,  // OutputPixelOffset", "    TRUE,  // AlignRegionsToCorners",
                 "    &batchIndicesTensor,  // BatchIndicesTensor",
                 "static const DML_OPERATOR_DESC operatorDesc = { DML_OPERATOR_ROI_ALIGN1, &opDesc };"):
        assert line in cpp.splitlines(), line
    # the harness's request: the numbers from the table, each input with its own type and slot
    prep = R._prepare(roi_align1.key, case.desc.to_dict(), inputs)
    assert R.wire_request(7, prep.op_type, prep.line_fields) == (
        "run 7 149 InputTensor=in:FLOAT32:1,2,4,4 ROITensor=in:FLOAT32:3,4 BatchIndicesTensor=in:UINT32:1,1,1,3 "
        "OutputTensor=out:FLOAT32:3,2,2,2 ReductionFunction=e:7 InterpolationMode=e:1 SpatialScaleX=f:0.5 "
        "SpatialScaleY=f:0.25 InputPixelOffset=f:0.5 OutputPixelOffset=f:-0.5 OutOfBoundsInputValue=f:0.0 "
        "MinimumSamplesPerOutput=u:1 MaximumSamplesPerOutput=u:4 AlignRegionsToCorners=b:1")
    assert [a.dtype for a in prep.inputs] == [np.float32, np.float32, np.uint32]
    assert [a.shape for a in prep.inputs] == [(1, 2, 4, 4), (3, 4), (3,)]
    assert prep.outputs == [("Y", np.dtype(np.float32), (3, 2, 2, 2))]
    with pytest.raises(ValueError, match="'batch_indices' is float32, the descriptor's DataType is UINT32"):
        R._prepare(roi_align1.key, case.desc, {**inputs, "batch_indices": np.zeros(3, np.float32)})
    # the report's struct text
    rows = D.struct_rows(roi_align1.key, case.desc.to_dict())
    assert ("BatchIndicesTensor", "const DML_TENSOR_DESC*", "{ DataType = DML_TENSOR_DATA_TYPE_UINT32, Sizes = {1, 1, 1, 3} }") in rows
    assert ("ReductionFunction", "DML_REDUCE_FUNCTION", "DML_REDUCE_FUNCTION_MAX") in rows
    assert D.struct_text(roi_align1.dml_name, rows, case.desc.FeatureLevel) == ROI_ALIGN1_TEXT


def test_an_input_of_its_own_type_keeps_it_and_reaches_the_harness_in_its_tensors_type(roi_align1):
    """Explicit values of an integer input (the new operator's INT64 batch indices, as ONNX takes
    them) keep their type; the harness gets them in the BatchIndicesTensor's UINT32 when they fit."""
    values = (("X", (1.0,) * 32), ("rois", (0.0, 0.0, 4.0, 4.0) * 3), ("batch_indices", (0, 0, 0)))
    case = Case(roi_align1, ROI_ALIGN1_DESC, 16, (), "explicit", 0, values)
    inputs = case.inputs()
    assert inputs["batch_indices"].dtype == np.int64 and inputs["X"].dtype == np.float32
    assert R._prepare(roi_align1.key, case.desc, inputs).inputs[2].dtype == np.uint32
    with pytest.raises(ValueError, match="'batch_indices' holds values outside UINT32's range"):
        R._prepare(roi_align1.key, case.desc, {**inputs, "batch_indices": np.array([0, -1, 0], np.int64)})


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_new_operators_cpp_compiles_against_its_directml_h_declaration(tmp_path):
    inc = _bundle_shim()(tmp_path)   # the registered operators' structs and numbers, each from its own file
    src = tmp_path / "roi_align1.cpp"
    src.write_text(DX.cpp_struct(ROI_ALIGN1.make_case(ROI_ALIGN1_DESC)))
    p = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable",
                        "-I", str(inc), str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# ----------------------------------------------------------------------------------------------
# The declarations are directml.h's
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(registry.OPERATORS))
def test_each_operator_declares_its_directml_h_struct(key):
    op = registry.OPERATORS[key]
    fields = op.layout(sample(op).desc)
    assert op.dml_type == "DML_OPERATOR_" + op.dml_name[len("DML_"):-len("_OPERATOR_DESC")]
    assert op.dml_type in op.directml_h.numbers["DML_OPERATOR_TYPE"]
    assert [(f.ctype, f.name, f.optional) for f in fields] == members(op.dml_name)
    assert declaration(op.dml_name, fields) == (f"struct {op.dml_name} {{\n" +
                                                "".join(f"    {t} {n};\n" for t, n, _ in members(op.dml_name)) + "};")
    for f in fields:
        if f.kind == "tensor":
            assert f.tensor in (op.input_shapes(sample(op).desc) if f.role == "input" else op.output_names) or not f.present
        if f.kind == "enum":
            assert f.number == op.directml_h.numbers[f.enum][f.value]


def test_the_numbers_of_directml_h_agree_across_operators():
    """Operators that share an enum write the same number for each constant, every operator type has
    its own number, and each operator names only its own DML_OPERATOR_TYPE."""
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    types: dict[int, str] = {}
    for op in registry.OPERATORS.values():
        assert set(op.directml_h.numbers["DML_OPERATOR_TYPE"]) == {op.dml_type}, op.key
        for enum, values in op.directml_h.numbers.items():
            for constant, number in values.items():
                assert constant.startswith(enum.removesuffix("_TYPE") + "_"), (op.key, constant)
                first = seen.setdefault((enum, constant), (number, op.key))
                assert first[0] == number, f"{constant}: {number} in {op.key}, {first[0]} in {first[1]}"
        n = op.dml_type_number
        assert types.setdefault(n, op.dml_type) == op.dml_type, f"{op.dml_type} and {types[n]} are both {n}"


def test_a_disagreeing_number_is_caught(monkeypatch):
    """The check above fails when one operator writes another number for a shared constant."""
    wrong = DirectmlH(ROI_ALIGN1.directml_h.struct, {**ROI_ALIGN1.directml_h.numbers, "DML_DEPTH_SPACE_ORDER":
                                                     {"DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH": 7}})
    monkeypatch.setattr(type(ROI_ALIGN1), "directml_h", wrong)
    with pytest.raises(AssertionError, match="DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH: 7 in roi_align1"):
        test_the_numbers_of_directml_h_agree_across_operators()


def test_the_new_operators_declaration_is_directml_hs(roi_align1):
    assert [(f.ctype, f.name, f.optional) for f in roi_align1.layout(ROI_ALIGN1_DESC)] == members(roi_align1.dml_name)


def test_an_optional_tensor_left_out_is_a_null_member_everywhere():
    op = registry.get("max_pooling2")
    case = next(c for c in op.sweep("smoke") if c.desc.OutputIndicesDataType is None)
    (idx,) = [f for f in op.layout(case.desc) if f.name == "OutputIndicesTensor"]
    assert not idx.present and idx.optional and idx.tensor is None
    assert R.wire_field(idx) == "OutputIndicesTensor=out:null"
    assert D.member_text(idx) == "nullptr"
    assert "nullptr,  // OutputIndicesTensor" in DX.cpp_struct(case)
    assert "OutputIndicesTensor" not in DX.dxdispatch_model(case, case.inputs())["dispatchables"]["max_pooling2"]["desc"]
    prep = R._prepare(op.key, case.desc, case.inputs())
    assert [(name, dtype) for name, dtype, _ in prep.outputs] == [("Y", DML_TO_NUMPY[case.desc.DataType]), (None, None)]


def test_field_declarations_are_checked():
    with pytest.raises(ValueError, match="only an optional tensor may be left out"):
        Input("InputTensor", "X", (1,), None)
    order = registry.get("space_to_depth1").directml_h
    with pytest.raises(ValueError, match="names its C type and a constant of it"):
        Field("Order", "enum", "DEPTH_COLUMN_ROW", enum="", number=0)
    with pytest.raises(KeyError, match="add its line from directml.h"):
        Enum("Mode", "DML_NO_SUCH_ENUM", "A", order)
    with pytest.raises(ValueError, match="carries the number"):
        Field("Order", "enum", "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW", enum="DML_DEPTH_SPACE_ORDER")
    assert Enum("Order", "DML_DEPTH_SPACE_ORDER", "COLUMN_ROW_DEPTH", order).value == "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH"
    assert Enum("Order", "DML_DEPTH_SPACE_ORDER", "DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH", order).number == 1
    with pytest.raises(ValueError, match="not a member declaration"):
        DirectmlH("UINT A;\n  garbage", {}).members()


# ----------------------------------------------------------------------------------------------
# The packing rule is a C compiler's layout
# ----------------------------------------------------------------------------------------------

#: members of every kind, in an order that needs padding before pointers and after DML_SIZE_2D
MIXED = [Uint("A", 1), Input("T", "X", (2, 3), "FLOAT16"), Int("B", -2), Size2D("S", 3, 4), Ints("C", (-1, 2)),
         Float("F", 1.5), Bool("G", True), Uints("D", (7,)), Enum("E", "DML_DEPTH_SPACE_ORDER", "COLUMN_ROW_DEPTH", registry.get("space_to_depth1").directml_h),
         Output("U", "Y", (6,), "UINT64")]
MIXED_C = """
        UINT A;
        const DML_TENSOR_DESC* T;
        INT B;
        DML_SIZE_2D S;
        const INT* C;
        FLOAT F;
        BOOL G;
        const UINT* D;
        DML_DEPTH_SPACE_ORDER E;
        const DML_TENSOR_DESC* U;"""
SLICE1 = [Input("InputTensor", "X", (1, 4), "FLOAT32"), Output("OutputTensor", "Y", (1, 2), "FLOAT32"),
          Uint("DimensionCount", 2), Uints("InputWindowOffsets", (0, 1)), Uints("InputWindowSizes", (1, 2)),
          Ints("InputWindowStrides", (1, -1))]


def known_layouts() -> dict[str, list]:
    """Struct name -> a layout of it: every operator's, SLICE1's (INT arrays) and a mix of every kind."""
    out = {op.dml_name: op.layout(sample(op).desc) for op in registry.OPERATORS.values()}
    out["DML_ROI_ALIGN1_OPERATOR_DESC"] = ROI_ALIGN1.layout(ROI_ALIGN1_DESC)   # the BOOL and FLOATs
    out["DML_SLICE1_OPERATOR_DESC"] = SLICE1
    out["MIXED"] = MIXED
    return out


def test_offsets_of_known_structs():
    """Offsets and sizes of directml.h structs on x64, worked out by hand."""
    layouts = known_layouts()
    assert offsets(layouts["DML_MAX_POOLING2_OPERATOR_DESC"]) == ([0, 8, 16, 24, 32, 40, 48, 56, 64], 72)
    assert offsets(layouts["DML_AVERAGE_POOLING1_OPERATOR_DESC"]) == ([0, 8, 16, 24, 32, 40, 48, 56, 64], 72)
    assert offsets(layouts["DML_ROI_POOLING_OPERATOR_DESC"]) == ([0, 8, 16, 24, 28], 40)
    assert offsets(layouts["DML_SPACE_TO_DEPTH1_OPERATOR_DESC"]) == ([0, 8, 16, 20], 24)
    assert offsets(layouts["DML_ROI_ALIGN1_OPERATOR_DESC"]) == ([0, 8, 16, 24, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68], 72)
    assert offsets(MIXED) == ([0, 8, 16, 20, 32, 40, 44, 48, 56, 64], 72)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_offsets_are_a_c_compilers(tmp_path):
    """The packing rule (what harness.c does, mirrored by ``offsets``) against gcc's layout of the
    directml.h declarations on x86-64."""
    layouts = known_layouts()
    decls = {**structs(), "MIXED": MIXED_C}
    src = ["#include <stdio.h>", "#include <stddef.h>", "typedef unsigned int UINT; typedef int INT;",
           "typedef int BOOL; typedef float FLOAT; typedef struct DML_TENSOR_DESC DML_TENSOR_DESC;",
           "typedef struct { UINT Width; UINT Height; } DML_SIZE_2D;",
           "typedef enum { DML_DEPTH_SPACE_ORDER_0 } DML_DEPTH_SPACE_ORDER;",
           "typedef enum { DML_REDUCE_FUNCTION_0 } DML_REDUCE_FUNCTION;",
           "typedef enum { DML_INTERPOLATION_MODE_0 } DML_INTERPOLATION_MODE;", "#define _Maybenull_"]
    body = []
    for name in layouts:
        src.append(f"struct {name} {{{decls[name]}\n}};")
        offs = " ".join(f'printf(" %zu", offsetof(struct {name}, {f.name}));' for f in layouts[name])
        body.append(f'printf("{name}"); {offs} printf(" %zu\\n", sizeof(struct {name}));')
    src += ["int main(void) {", *body, "return 0; }"]
    (tmp_path / "layout.c").write_text("\n".join(src))
    subprocess.run(["gcc", "-Werror", "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")], check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout
    for line in printed.splitlines():
        name, *numbers = line.split()
        *offs, size = map(int, numbers)
        assert offsets(layouts[name]) == (offs, size), name
    assert len(printed.splitlines()) == len(layouts)


def _bundle_shim():
    """tests/bundle/test_bundle.py's shim builder, also when that file was not collected."""
    spec = importlib.util.spec_from_file_location("test_bundle", Path(__file__).parents[1] / "bundle" / "test_bundle.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._shim
