"""Tests of the direct DirectML lane (onnx_dml_bench.dml.direct): descriptors run straight through
DirectML.dll under Wine, no ONNX Runtime, compared with the bench's NumPy reference.

They need the installed DirectML stack (skipped without it; install it with
``onnx-dml-bench setup dml``) and the MinGW-w64 cross compiler (installed with apt-get
when missing and running as root).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import inputs_of, mismatches
from onnx_dml_bench import registry
from onnx_dml_bench.dml import direct
from onnx_dml_bench.dml.direct import build
from onnx_dml_bench.dml.direct import runner as R
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops._struct import KINDS, offsets

# every test here shares one Wine prefix (and its wineserver): one xdist worker
pytestmark = [pytest.mark.dml, pytest.mark.xdist_group("wine")]


# --------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def harness_exe(dml_stack):
    return direct.ensure_built(dml_stack)


@pytest.fixture(scope="module")
def runner(dml_stack, harness_exe):
    with direct.DirectRunner(dml_stack, exe=harness_exe, timeout_s=120) as r:
        yield r


def run_and_compare(runner, op_key: str, desc, as_dict: bool = False):
    op = registry.get(op_key)
    case = op.make_case(desc)
    x = inputs_of(case)
    res = runner.run(op_key, desc.to_dict() if as_dict else desc, x)
    assert res.ok, f"{case.id}: {res.stage}: {res.error}"
    assert mismatches(case, res.outputs) == []
    for name, (shape, dml_type) in op.outputs(case).items():
        assert res.outputs[name].shape == tuple(shape), name
    return res


# --------------------------------------------------------------------------------------------
# descriptors
# --------------------------------------------------------------------------------------------

def max_pool(sizes, window, strides, start, end, dil, dtype="FLOAT32", idx=None, level="5.0"):
    return registry.get("max_pooling2").Desc(
        InputSizes=sizes, DataType=dtype, DimensionCount=len(window), Strides=strides, WindowSize=window,
        StartPadding=start, EndPadding=end, Dilations=dil, OutputIndicesDataType=idx, FeatureLevel=level)


def avg_pool(sizes, window, strides, start, end, dil, include_padding, dtype="FLOAT32"):
    return registry.get("average_pooling1").Desc(
        InputSizes=sizes, DataType=dtype, DimensionCount=len(window), Strides=strides, WindowSize=window,
        StartPadding=start, EndPadding=end, Dilations=dil, IncludePadding=include_padding)


def space_depth(op_key, sizes, block, order, dtype="FLOAT32"):
    return registry.get(op_key).Desc(InputSizes=sizes, DataType=dtype, BlockSize=block, Order=order)


# --------------------------------------------------------------------------------------------
# build and device
# --------------------------------------------------------------------------------------------

def test_build_goes_to_the_cache_with_a_source_hash(dml_stack, harness_exe):
    assert harness_exe.exists() and harness_exe.suffix == ".exe"
    assert Path(dml_stack.cache_dir) in harness_exe.parents
    assert Path(build.SOURCE_DIR) not in harness_exe.parents
    cc = build.find_compiler()
    assert build.source_hash(cc) in harness_exe.name
    assert direct.ensure_built(dml_stack) == harness_exe   # no rebuild for the same sources


def test_device_info(runner):
    info = runner.device_info()
    print("direct lane device:", {k: info[k] for k in ("adapter", "max_feature_level", "dml_version")})
    assert info["ready"]
    assert tuple(int(p) for p in info["max_feature_level"].split(".")) >= (5, 0)
    assert info["dtypes"]["FLOAT32"] and info["dtypes"]["FLOAT16"]
    if "DirectML.dll" in runner.stack.versions:   # the DLL of the --ep dml lane
        assert info["dml_version"]["file_version"] == runner.stack.versions["DirectML.dll"]
    assert runner.unsupported("max_pooling2", max_pool((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1),
                                                       "INT32", level="5.0")) is None


# --------------------------------------------------------------------------------------------
# known answers, against the NumPy reference
# --------------------------------------------------------------------------------------------

def test_max_pooling2_uint32_indices_dilations_padding(runner):
    d = max_pool((1, 2, 9, 7), (2, 3), (1, 2), (0, 1), (1, 2), (3, 1), idx="UINT32", level="2.1")
    res = run_and_compare(runner, "max_pooling2", d)
    assert res.outputs["Indices"].dtype == np.uint32


def test_max_pooling2_int32_at_fl50(runner):
    """INT32 MaxPool: a DirectML capability no ONNX graph can request."""
    d = max_pool((2, 3, 7, 6), (3, 3), (2, 2), (1, 0), (0, 1), (1, 1), "INT32", idx="UINT64")
    res = run_and_compare(runner, "max_pooling2", d)
    assert res.outputs["Y"].dtype == np.int32 and res.outputs["Indices"].dtype == np.uint64
    run_and_compare(runner, "max_pooling2", d.replace(OutputIndicesDataType=None))


def test_max_pooling2_3d_uint8(runner):
    run_and_compare(runner, "max_pooling2",
                    max_pool((1, 2, 6, 6, 5), (2, 2, 2), (2, 1, 2), (0, 1, 0), (1, 0, 1), (2, 2, 1), "UINT8",
                             idx="UINT32", level="3.0"))


def test_max_pooling2_float16(runner):
    d = max_pool((2, 2, 8, 5), (3, 2), (2, 2), (1, 0), (1, 1), (2, 1), "FLOAT16", idx="UINT32")
    res = run_and_compare(runner, "max_pooling2", d, as_dict=True)
    assert res.outputs["Y"].dtype == np.float16


@pytest.mark.parametrize("include_padding", [False, True])
def test_average_pooling1_dilations(runner, include_padding):
    run_and_compare(runner, "average_pooling1",
                    avg_pool((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (2, 2), include_padding))


def test_average_pooling1_float16(runner):
    run_and_compare(runner, "average_pooling1",
                    avg_pool((2, 3, 7, 6), (3, 2), (1, 2), (1, 0), (0, 1), (1, 2), True, "FLOAT16"))


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_roi_pooling_pooled_2x3(runner, dtype):
    d = registry.get("roi_pooling").Desc(InputSizes=(2, 3, 10, 12), RoiSizes=(4, 5), DataType=dtype,
                                         SpatialScale=0.5, PooledSize=(2, 3))
    res = run_and_compare(runner, "roi_pooling", d, as_dict=True)   # PooledSize as {Height, Width}
    assert res.outputs["Y"].shape == (4, 3, 2, 3)


@pytest.mark.parametrize("order", ["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"])
def test_space_to_depth1(runner, order):
    run_and_compare(runner, "space_to_depth1", space_depth("space_to_depth1", (2, 3, 4, 6), 2, order))


@pytest.mark.parametrize("order", ["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"])
def test_depth_to_space1(runner, order):
    run_and_compare(runner, "depth_to_space1", space_depth("depth_to_space1", (2, 8, 3, 2), 2, order, "INT64"))


# --------------------------------------------------------------------------------------------
# any operator desc, packed as a C compiler lays it out
# --------------------------------------------------------------------------------------------

def _read_back(f, slot: int) -> str:
    """What ``debug pack`` reads back through the packed desc for member ``f``."""
    if f.kind == "tensor":
        if not f.present:
            return "null"
        n = int(np.prod(f.sizes)) * np.dtype(DML_TO_NUMPY[f.dtype]).itemsize
        return f"{'in' if f.role == 'input' else 'out'}{slot}:{f.dtype}:{','.join(map(str, f.sizes))}:{(n + 3) // 4 * 4}"
    if f.kind in ("uints", "ints", "size2d"):
        return ",".join(str(v) for v in f.value)
    if f.kind == "float":
        return f"{float(np.float32(f.value)):.9g}"
    if f.kind == "enum":
        return str(f.number)
    return str(int(f.value))


def test_the_harness_packs_any_desc_as_a_c_compiler_does(runner):
    """Every operator's struct, SLICE1's and a mix of every member kind: each member
    at the offset a C compiler gives it (tests/contract/test_struct_layout.py checks those against gcc), holding
    its value; tensors point to their slot's buffer tensor desc."""
    from test_struct_layout import known_layouts
    for name, fields in known_layouts().items():
        answer = runner.pack(1, fields)
        assert answer.get("ok"), (name, answer)
        offs, size = offsets(fields)
        slots = {"input": 0, "output": 0}
        want = []
        for f, off in zip(fields, offs):
            slot = slots.setdefault(f.role, 0)
            if f.kind == "tensor":
                slots[f.role] += 1
            kind = R.wire_field(f).split("=", 1)[1].split(":", 1)[0]
            want.append([f.name, kind, off, KINDS[f.kind][1], _read_back(f, slot)])
        assert answer["members"] == want, name
        assert answer["size"] == size, name


def test_a_new_operator_runs_without_a_harness_change(runner):
    """DML_ROI_ALIGN1, declared in its own module only (ops/roi_align/): a third input of another
    type, FLOAT members, enums, a BOOL: its answer is the reference's."""
    from test_struct_layout import ROI_ALIGN1 as op, ROI_ALIGN1_DESC
    from onnx_dml_bench.outcome import Outcome
    from onnx_dml_bench.verdict import judge
    case = op.make_case(ROI_ALIGN1_DESC.replace(OutOfBoundsInputValue=1.0))
    inputs = case.inputs()
    res = runner.run(op.key, case.desc, inputs)
    assert res.ok, (res.stage, res.error)
    assert res.outputs["Y"].shape == (3, 2, 2, 2)
    j = judge(case, inputs, Outcome(True, "done", None, res.outputs), None, None, ep_name="DirectML", ep_is_cpu=False,
              semantics="dml")
    assert j.verdict == "PASS", j.reason


# --------------------------------------------------------------------------------------------
# failures and recovery
# --------------------------------------------------------------------------------------------

def test_invalid_descriptor_names_the_failing_call_and_the_next_request_works(runner):
    # AVERAGE_POOLING1 takes FLOAT32/FLOAT16 only: DirectML must refuse INT32
    bad = avg_pool((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), False, "INT32")
    res = runner.run("average_pooling1", bad, {"X": np.zeros((1, 1, 4, 4), np.int32)})
    assert not res.ok
    assert res.stage == "CreateOperator", res
    assert "CreateOperator failed" in res.error and "0x80070057" in res.error
    test_max_pooling2_int32_at_fl50(runner)


def test_crash_gives_crash_and_the_next_request_works(runner):
    restarts = runner.restarts
    res = runner.debug("crash")
    assert not res.ok and res.stage == "crash", res
    test_space_to_depth1(runner, "DEPTH_COLUMN_ROW")
    assert runner.restarts == restarts + 1


def test_hang_gives_timeout_and_the_next_request_works(dml_stack, harness_exe):
    with direct.DirectRunner(dml_stack, exe=harness_exe, timeout_s=5) as r:
        res = r.debug("hang")
        assert not res.ok and res.stage == "timeout", res
        test_depth_to_space1(r, "COLUMN_ROW_DEPTH")


def test_throughput_small_max_pooling(runner):
    op = registry.get("max_pooling2")
    jobs, cases = [], []
    for i in range(200):
        h, w = 4 + i % 5, 5 + i % 3
        d = max_pool((1, 2, h, w), (2, 2), (1 + i % 2, 1), (i % 2, 0), (0, 1), (1, 1),
                     ("FLOAT32", "INT32", "UINT8", "FLOAT16")[i % 4], idx=(None, "UINT32", "UINT64")[i % 3])
        case = op.make_case(d)
        cases.append(case)
        jobs.append(("max_pooling2", d, inputs_of(case)))
    runner.run(*jobs[0])   # warm
    t0 = time.perf_counter()
    results = runner.run_many(jobs)
    dt = time.perf_counter() - t0
    print(f"\ndirect lane: {len(jobs)} small MaxPool cases in {dt:.2f} s = {len(jobs) / dt:.1f} cases/s")
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    bad = [m for case, r in zip(cases, results) for m in mismatches(case, r.outputs)]
    assert bad == []


# --------------------------------------------------------------------------------------------
# timing (the performance lens): D3D12 timestamps around each dispatch
# --------------------------------------------------------------------------------------------

def test_time_gives_the_gpu_time_of_each_dispatch_and_the_same_outputs(runner):
    d = max_pool((1, 8, 32, 32), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), idx="UINT32", level="2.1")
    op = registry.get("max_pooling2")
    x = inputs_of(op.make_case(d))
    plain = runner.run("max_pooling2", d, x)
    res = runner.time("max_pooling2", d, x, warmup=2, repeats=7)
    assert res.ok, res.error
    assert res.gpu["timestamp_frequency"] > 0 and res.gpu["warmup"] == 2
    assert len(res.gpu["ms"]) == 7 and all(0 < t < 10_000 for t in res.gpu["ms"])
    for name in plain.outputs:
        assert np.array_equal(res.outputs[name], plain.outputs[name])      # the dispatch repeated: same answer
    assert not plain.gpu                                                     # a plain run is not timed


def test_the_yardstick_copies_are_timed_and_checked(runner):
    ident = runner.identity(1 << 20, warmup=1, repeats=4)
    assert ident.ok, ident.error
    assert len(ident.gpu["ms"]) == 4 and all(t > 0 for t in ident.gpu["ms"])
    copy = runner.copy(1 << 20, warmup=1, repeats=4)
    assert copy.ok, copy.error
    assert len(copy.gpu["ms"]) == 4 and all(t > 0 for t in copy.gpu["ms"])
    with pytest.raises(ValueError):
        runner.time("max_pooling2", max_pool((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1)), {}, 0, 0)


def test_bad_timing_requests_are_parse_errors_and_the_next_request_works(runner):
    h = runner._harness()
    for line in ("time x 3 1 1", "time 1 0 1 1", "copy 0 1 1", "copy 16 1 999999"):
        h.send(line)
        answer = h.next_answer(30)
        assert answer and answer["ok"] is False and answer["stage"] == "Parse", (line, answer)
        assert line.split()[0] in answer["error"] and "unknown command" not in answer["error"], answer
    run_and_compare(runner, "max_pooling2", max_pool((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1)))


def test_a_prebuilt_harness_of_the_same_sources_serves_without_a_compiler(dml_stack, harness_exe, monkeypatch,
                                                                         tmp_path):
    """A GPU host has no MinGW: the bundle's executable, built from the same sources (its .json says
    so), is used; one of other sources is not."""
    meta = json.loads(harness_exe.with_suffix(".json").read_text())
    assert meta["sources"] == build.sources_hash()
    monkeypatch.setattr(build, "find_compiler", lambda: None)
    assert build.ensure_built(dml_stack) == harness_exe
    assert build.build_id(dml_stack) == "prebuilt-" + harness_exe.stem.removeprefix("harness-")
    other = tmp_path / "direct"
    other.mkdir()
    (other / "harness-0000.exe").write_bytes(b"MZ")
    (other / "harness-0000.json").write_text(json.dumps({"sources": "not these sources"}))
    assert build.prebuilt(other) is None


def test_every_tensor_type_is_asked_whatever_its_field():
    """The data type of each tensor the operator's layout declares is checked against what DirectML
    reports supported, not only DataType and MaxPool's OutputIndicesDataType: a new operator's
    integer BatchIndicesTensor of a type the device lacks is NOT_SUPPORTED, naming the tensor."""
    from test_struct_layout import ROI_ALIGN1 as op, ROI_ALIGN1_DESC
    runner = R.DirectRunner(None)
    try:
        runner._info = {"dtypes": {t: t != "UINT64" for t in DML_TO_NUMPY}, "max_feature_level": "6.4"}
        assert runner.unsupported(op.key, ROI_ALIGN1_DESC) is None
        assert runner.unsupported(op.key, ROI_ALIGN1_DESC.replace(BatchIndicesDataType="UINT64")) == (
            "DirectML reports UINT64 (BatchIndicesTensor) unsupported (DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT)")
    finally:
        runner.close()
