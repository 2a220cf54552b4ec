"""The device's own clock for the CUDA and TensorRT EPs: CUDA events on the session's stream.

ONNX Runtime's profiler gives kernel times on the device only in builds with CUDA profiling (not
the released packages), and host wall clock around a run measures launches where a kernel is short.
So the lens gives the EP a stream of its own (the provider options ``user_compute_stream`` and
``has_user_compute_stream``) and records a CUDA event on it before and after each run: the elapsed
time between the two events is the time the device spent on the run's kernels (and whatever else
the EP put on that stream), with no host time in it.

The same events time a device-to-device copy (cudaMemcpyAsync on the stream), the yardstick of the
share column: bytes read + written over the median, as for the cases.

The CUDA runtime is reached through ctypes (libcudart, the library the EP itself loads); nothing
here is needed by the rest of the bench.
"""
from __future__ import annotations

import ctypes

#: the EPs whose runs this clock can time (their provider options take a user stream)
EPS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")
_NAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so")
_MEMCPY_DEVICE_TO_DEVICE = 3
_STREAM_NON_BLOCKING = 1


class ClockError(RuntimeError):
    pass


def _loaded_cudart() -> str | None:
    """The path of a libcudart already mapped into this process (the EP's), if any."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                path = line.split()[-1]
                if "libcudart.so" in path:
                    return path
    except OSError:
        pass
    return None


def load_cudart(loader=ctypes.CDLL):
    """libcudart: the one this process has mapped, else the first of _NAMES the loader finds
    (after ``onnxruntime.preload_dlls()`` where it exists: the CUDA libraries of pip packages)."""
    errors = []
    for attempt in range(2):
        path = _loaded_cudart()
        for name in ((path,) if path else ()) + _NAMES:
            try:
                return loader(name)
            except OSError as e:
                errors.append(f"{name}: {e}")
        if attempt == 0:
            try:
                import onnxruntime as ort
                getattr(ort, "preload_dlls", lambda **k: None)()
            except Exception as e:  # noqa: BLE001 - reported below with the rest
                errors.append(f"onnxruntime.preload_dlls: {e}")
    raise ClockError("no CUDA runtime library: " + "; ".join(errors[-4:]))


class CudaClock:
    """A CUDA stream for the EP and events on it. ``rt``: libcudart (``load_cudart``)."""

    name = "CUDA events on the session's stream (cudaEventElapsedTime)"

    def __init__(self, rt=None):
        self.rt = rt if rt is not None else load_cudart()
        self.stream = ctypes.c_void_p()
        self._check(self.rt.cudaStreamCreateWithFlags(ctypes.byref(self.stream), _STREAM_NON_BLOCKING),
                    "cudaStreamCreateWithFlags")
        self.start, self.stop = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.rt.cudaEventCreate(ctypes.byref(self.start)), "cudaEventCreate")
        self._check(self.rt.cudaEventCreate(ctypes.byref(self.stop)), "cudaEventCreate")

    def _check(self, code: int, what: str) -> None:
        if code:
            raise ClockError(f"{what} failed: CUDA error {code}")

    def provider_options(self) -> dict[str, str]:
        """What the EP needs to run its kernels on this stream."""
        return {"user_compute_stream": str(self.stream.value or 0), "has_user_compute_stream": "1"}

    def time_ms(self, fn) -> float:
        """fn() between two events on the stream: the device time between them, in ms."""
        self._check(self.rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        fn()
        self._check(self.rt.cudaEventRecord(self.stop, self.stream), "cudaEventRecord")
        self._check(self.rt.cudaEventSynchronize(self.stop), "cudaEventSynchronize")
        ms = ctypes.c_float()
        self._check(self.rt.cudaEventElapsedTime(ctypes.byref(ms), self.start, self.stop), "cudaEventElapsedTime")
        return float(ms.value)

    def yardstick(self, nbytes: int, warmup: int, runs: int) -> dict:
        """A device-to-device copy of ``nbytes`` (cudaMemcpyAsync on the stream), each of ``runs``
        runs timed by the events: ``{"cuda-copy": {"ok", "samples_ms"}}`` as ``Timer.yardstick``
        gives its copies (``perf.yardstick_figures`` makes the figures)."""
        src, dst = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            self._check(self.rt.cudaMalloc(ctypes.byref(src), ctypes.c_size_t(nbytes)), "cudaMalloc")
            self._check(self.rt.cudaMalloc(ctypes.byref(dst), ctypes.c_size_t(nbytes)), "cudaMalloc")
            copy = lambda: self._check(self.rt.cudaMemcpyAsync(dst, src, ctypes.c_size_t(nbytes),  # noqa: E731
                                                               _MEMCPY_DEVICE_TO_DEVICE, self.stream), "cudaMemcpyAsync")
            for _ in range(warmup):
                self.time_ms(copy)
            samples = [self.time_ms(copy) for _ in range(max(1, runs))]
        except ClockError as e:
            return {"cuda-copy": {"ok": False, "error": str(e)}}
        finally:
            for p in (src, dst):
                if p.value:
                    self.rt.cudaFree(p)
        return {"cuda-copy": {"ok": True, "samples_ms": samples}}

    def close(self) -> None:
        for e in (self.start, self.stop):
            if e.value:
                self.rt.cudaEventDestroy(e)
        if self.stream.value:
            self.rt.cudaStreamDestroy(self.stream)
        self.start = self.stop = self.stream = ctypes.c_void_p()
