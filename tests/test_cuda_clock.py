"""The device clock of the CUDA and TensorRT EPs (``cuda_clock``) on a stand-in CUDA runtime that
keeps a device time of its own: what the clock reports is the device time between its two events,
whatever the host does; its errors are ClockError; ``perf`` times runs with it."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from onnx_dml_bench import cuda_clock as CC
from onnx_dml_bench import perf


class FakeRuntime:
    """libcudart's calls the clock makes; ``now`` is the device's time in ms, moved by work put
    on the stream (``work``) and by copies (1 ms per GB)."""

    def __init__(self, fail: str | None = None):
        self.now, self.marks, self.fail, self.freed = 0.0, {}, fail, []
        self.handles = iter(range(0x1000, 0x2000, 8))

    def _rc(self, name):
        return 700 if name == self.fail else 0

    def _new(self, ref):
        ref._obj.value = next(self.handles)

    def cudaStreamCreateWithFlags(self, ref, flags):
        self._new(ref)
        return self._rc("cudaStreamCreateWithFlags")

    def cudaEventCreate(self, ref):
        self._new(ref)
        return self._rc("cudaEventCreate")

    def cudaEventRecord(self, ev, stream):
        self.marks[ev.value] = self.now
        return self._rc("cudaEventRecord")

    def cudaEventSynchronize(self, ev):
        return 0

    def cudaEventElapsedTime(self, ref, a, b):
        ref._obj.value = self.marks[b.value] - self.marks[a.value]
        return self._rc("cudaEventElapsedTime")

    def cudaMalloc(self, ref, n):
        self._new(ref)
        return self._rc("cudaMalloc")

    def cudaMemcpyAsync(self, dst, src, n, kind, stream):
        assert kind == 3
        self.now += n.value / 1e9 * 1e3 / 1e3         # 1 ms per GB
        return 0

    def cudaFree(self, p):
        self.freed.append(p.value)

    def cudaEventDestroy(self, e):
        pass

    def cudaStreamDestroy(self, s):
        pass

    def work(self, ms):
        self.now += ms


def test_the_clock_reads_the_device_time_between_its_events():
    rt = FakeRuntime()
    clock = CC.CudaClock(rt)
    opts = clock.provider_options()
    assert opts["has_user_compute_stream"] == "1" and int(opts["user_compute_stream"]) == clock.stream.value != 0
    assert clock.time_ms(lambda: rt.work(2.5)) == pytest.approx(2.5)
    assert clock.time_ms(lambda: None) == 0.0               # host time does not count
    clock.close()


def test_the_copy_yardstick_gives_the_bytes_over_the_device_time():
    rt = FakeRuntime()
    clock = CC.CudaClock(rt)
    raw = clock.yardstick(1 << 30, warmup=2, runs=5)
    assert raw["cuda-copy"]["ok"] and len(raw["cuda-copy"]["samples_ms"]) == 5
    ys = perf.yardstick_figures(raw, 1 << 30)
    assert ys["best"] == "cuda-copy"
    assert ys["cuda-copy"]["gbs"] == pytest.approx(2 * (1 << 30) / ((1 << 30) / 1e9 * 1e-3) / 1e9, rel=1e-3)
    assert len(rt.freed) == 2


@pytest.mark.parametrize("call", ["cudaStreamCreateWithFlags", "cudaEventCreate", "cudaEventRecord", "cudaEventElapsedTime"])
def test_a_failing_call_is_a_clock_error(call):
    rt = FakeRuntime(fail=call)
    with pytest.raises(CC.ClockError, match=call):
        CC.CudaClock(rt).time_ms(lambda: None)


def test_a_failing_allocation_leaves_the_yardstick_not_ok():
    rt = FakeRuntime(fail="cudaMalloc")
    raw = CC.CudaClock(rt).yardstick(1024, 0, 3)
    assert raw["cuda-copy"]["ok"] is False and "cudaMalloc" in raw["cuda-copy"]["error"]
    assert perf.yardstick_figures(raw, 1024)["best"] is None


def test_no_runtime_is_a_clock_error():
    def loader(name):
        raise OSError("not found")
    with pytest.raises(CC.ClockError, match="no CUDA runtime"):
        CC.load_cudart(loader)


def test_perf_times_each_run_with_the_clock():
    """perf._timed on a CPU EP session: with a clock, each run's time is the clock's."""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    sess = ort.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    rt = FakeRuntime()
    clock = CC.CudaClock(rt)
    steps = iter([1.0, 2.0, 3.0])
    real = sess.run_with_iobinding

    def run(io, *a):
        real(io, *a)
        rt.work(next(steps, 0.0))
    sess.run_with_iobinding = run
    x = np.array([-1, 2, -3, 4], np.float32)
    times, _, got = perf._timed(ort, sess, perf.Binder("cpu"), "host", {"x": x}, {"y": ((4,), "FLOAT32")},
                                3, 0, clock)
    assert times == [1_000_000, 2_000_000, 3_000_000]
    assert np.array_equal(got["y"], np.maximum(x, 0))


def test_no_device_clock_off_cuda():
    class Lane:
        ep_name, options = "CPUExecutionProvider", {}
    assert perf._device_clock(Lane(), print) is None


def test_a_cuda_lane_without_a_runtime_keeps_the_host_clock(monkeypatch):
    class Lane:
        ep_name, options = "CUDAExecutionProvider", {}
    said = []
    monkeypatch.setattr(CC, "load_cudart", lambda loader=None: (_ for _ in ()).throw(CC.ClockError("no CUDA runtime library: x")))
    assert perf._device_clock(Lane(), said.append) is None
    assert "host wall clock" in said[0] and Lane.options == {}


def test_a_cuda_lane_gets_the_clock_stream(monkeypatch):
    class Lane:
        ep_name, options = "TensorrtExecutionProvider", {}
    monkeypatch.setattr(CC, "load_cudart", lambda loader=None: FakeRuntime())
    clock = perf._device_clock(Lane(), print)
    assert clock is not None and Lane.options["user_compute_stream"] == str(clock.stream.value)
