"""The TensorRT EP of onnxruntime-gpu (``--ep tensorrt``): an ONNX Runtime lane whose engines are
cached in the run folder, and whose FP16 kernels are allowed only when asked.

TensorRT's own libraries (libnvinfer, libnvonnxparser) are not part of onnxruntime-gpu: the
package lists the EP whether they are there or not, so the lane's preflight opens a real session
(``ort.check_session``; ``eps`` says ok only then). Placement is proven as for every ONNX Runtime
lane: CPU fallback off, each node's EP read back from the session (the nodes of a TensorRT subgraph
are the EP's). EP options pass through to the EP (``--ep-option trt_fp16_enable=True``: FP16
kernels allowed, and said so in the environment record); the engine cache, unless the options name
one, is ``trt_engine_cache/`` in the run folder (``Lane.in_run_folder``), kept out of the
environment's identity so that runs into two folders stay one environment.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .base import Entry
from .ort import NvidiaLane

KEY = "tensorrt"
EP_NAME = "TensorrtExecutionProvider"
PACKAGE = "onnxruntime-gpu with TensorRT's libraries (tensorrt-cu13-libs for onnxruntime-gpu's CUDA 13 build)"
HOWTO = ("pip install onnxruntime-gpu tensorrt-cu13-libs==10.* --extra-index-url https://pypi.nvidia.com, with the "
         "folder holding libnvinfer.so.10 on LD_LIBRARY_PATH (scripts/gpu-trt/ stages them to an offline machine)")
#: the engine cache's folder in the run folder
CACHE = "trt_engine_cache"
#: EP options that make TensorRT compute in another precision than the case's type
REDUCED_PRECISION = ("trt_fp16_enable", "trt_int8_enable", "trt_bf16_enable")


@dataclass
class TensorrtLane(NvidiaLane):
    """The TensorRT EP; ``cache_dir``: where its engines are cached (not an identity option)."""
    cache_dir: str | None = None

    def in_run_folder(self, out: Path) -> "TensorrtLane":
        return dataclasses.replace(self, options=dict(self.options), cache_dir=str(Path(out) / CACHE))

    def on_device(self, unit: dict) -> "TensorrtLane":
        lane = super().on_device(unit)
        if lane.cache_dir:            # engines are built per device: one cache each, no two processes sharing one
            lane.cache_dir = str(Path(lane.cache_dir) / f"device-{unit['index']}")
        return lane

    def _provider_options(self) -> dict:
        opts = super()._provider_options()
        if self.cache_dir and "trt_engine_cache_path" not in opts:
            opts.setdefault("trt_engine_cache_enable", "True")
            opts["trt_engine_cache_path"] = self.cache_dir
        return opts

    def environment(self) -> dict:
        env = super().environment()
        if self.cache_dir:
            env["engine_cache"] = self.cache_dir
        reduced = [k for k in REDUCED_PRECISION if str(self.options.get(k, "")).lower() in ("1", "true")]
        if reduced:
            env["precision"] = (f"reduced precision allowed ({', '.join(reduced)}): TensorRT may compute float32 "
                                "cases in fewer bits, and their outputs are judged by the float32 bounds as asked")
        return env


ENTRY = Entry(KEY, EP_NAME, PACKAGE, HOWTO, TensorrtLane)
