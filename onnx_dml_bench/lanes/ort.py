"""EPs of the installed ONNX Runtime: the ones built into the package (CPU, CUDA, OpenVINO,
DirectML on Windows, TensorRT, ...) and plugin libraries registered at run time (WebGPU from the
onnxruntime-ep-webgpu package, or any plugin library given by path); their sessions, and the
in-process backend that runs a batch's models on them.
"""
from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from onnx import TensorProto, helper

from .. import verdict as V
from ..errors import ProviderError
from ..machine import cpu_name, nvidia, nvidia_gpus
from ..outcome import Outcome
from .base import Entry, Lane, PreflightError, RunConfig, Shipped, device_named, ort_package

OPTIMIZATION_LEVELS = ("disabled", "basic", "extended", "all")


def graph_optimization_level(ort, name: str):
    """ONNX Runtime's GraphOptimizationLevel for the bench's name of it."""
    return {"disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[name]


#: ONNX Runtime's log severity in the bench's sessions: 4 (FATAL), so that errors of expected
#: refusals and failed runs, kept in each record's reason, are not printed as well
LOG_SEVERITY = 4


@dataclass
class OrtLane(Lane):
    """An EP built into the installed onnxruntime package. Its subclasses below are the built-in
    EPs whose device, options or facts the bench knows more of."""
    in_process: ClassVar[bool] = True
    #: EP options it gets unless the user gives them
    option_defaults: ClassVar[dict] = {}
    #: sessions of the EP under test with memory patterns on and the default execution mode (off and
    #: sequential: the DirectML EP's requirement)
    mem_pattern: ClassVar[bool] = True

    @classmethod
    def resolve(cls, entry: Entry, options: dict) -> "OrtLane":
        """The built-in EP of ``entry`` in the installed package, checked to be listed there (its
        session is checked by the preflight)."""
        import onnxruntime as ort
        if entry.ep_name not in ort.get_available_providers():
            pkg, ver = ort_package()
            raise ProviderError(f"{entry.ep_name} is not available in the installed {pkg} {ver}: it comes with "
                                f"{entry.package}")
        for k, v in cls.option_defaults.items():
            options.setdefault(k, v)
        return cls(entry.key, entry.ep_name, "%s %s" % ort_package(), options, entry.howto)

    def make_backend(self, cfg: RunConfig) -> "OrtBackend":
        return OrtBackend(self, cfg)

    def session_options(self, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        """SessionOptions for a run: CPU fallback disabled whenever the EP under test is not the
        CPU EP, per-node EP assignment recorded, graph optimisations as asked (default disabled)."""
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = graph_optimization_level(ort, optimization)
        # ONNX Runtime's own logger off (FATAL only): a refused or failed case is a verdict whose
        # reason holds the same status text; its log lines would only interleave with progress
        so.log_severity_level = LOG_SEVERITY
        ort.set_default_logger_severity(LOG_SEVERITY)
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        if side_is_ep and not self.is_cpu:
            so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        if side_is_ep and not self.mem_pattern:
            so.enable_mem_pattern = False
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        return so

    def make_session(self, model: bytes, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        import onnxruntime as ort
        so = self.session_options(side_is_ep=side_is_ep, optimization=optimization, threads=threads)
        if not side_is_ep or self.is_cpu:
            return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return session_class()(model, so, providers=[(self.ep_name, self._provider_options())])

    canary_name: ClassVar[str] = "session check"

    def preflight(self) -> dict:
        """The EP under test opens a session of a small MaxPool with CPU fallback off and gives its
        known answer (an EP the package lists may still lack its libraries: TensorRT's)."""
        if self.is_cpu:
            return {}
        check_session(self)
        return {"session_check": f"a MaxPool session opened on {self.ep_name} and gave its known answer"}

    def _provider_options(self) -> dict:
        return {k: str(v) for k, v in self.options.items()}


@dataclass
class CpuLane(OrtLane):
    """ONNX Runtime's CPU EP: under test, or the second side of every other lane's comparison."""
    shipped: ClassVar[Shipped] = Shipped(
        "cpu.yaml", "ONNX Runtime's onnxruntime package (the pinned CPU build)",
        lambda envs, device: all(e.ort_package == "onnxruntime" for e in envs))


@dataclass
class NvidiaLane(OrtLane):
    """A built-in EP on NVIDIA GPUs (CUDA; TensorRT below it): its device is chosen by the option
    ``device_id`` (CUDA's index), its facts are nvidia-smi's, its memory CUDA's."""
    option_defaults: ClassVar[dict] = {"device_id": "0"}

    def make_backend(self, cfg: RunConfig) -> "OrtBackend":
        if self.unit is not None:
            # CUDA numbers devices as nvidia-smi does (the PCI bus order) only when told so
            os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        return super().make_backend(cfg)

    def host_devices(self) -> list[dict]:
        return nvidia_gpus()

    def on_device(self, unit: dict) -> "NvidiaLane":
        lane = super().on_device(unit)
        lane.options["device_id"] = str(unit["index"])
        return lane

    def environment(self) -> dict:
        env = super().environment()
        env.update(nvidia())
        if self.unit is not None:      # the device bound, not the host's first
            env.update({k: self.unit[k] for k in ("name", "driver", "device_memory") if k in self.unit})
            env["device"] = env.pop("name", env.get("device", ""))
        return env

    def io_device(self) -> tuple[str, int] | None:
        return ("cuda", int(self.options.get("device_id", 0)))


@dataclass
class OpenVinoLane(OrtLane):
    """The OpenVINO EP (on the CPU unless ``device_type`` says otherwise)."""
    option_defaults: ClassVar[dict] = {"device_type": "CPU"}

    def environment(self) -> dict:
        env = super().environment()
        env["device"] = f"OpenVINO {self.options.get('device_type', 'CPU')} ({cpu_name()})"
        try:
            env["versions"]["openvino"] = md.version("openvino")
        except md.PackageNotFoundError:
            pass
        return env


@dataclass
class DmlLane(OrtLane):
    """The DirectML EP of onnxruntime-directml, in this process (Windows)."""
    option_defaults: ClassVar[dict] = {"device_id": "0"}
    mem_pattern: ClassVar[bool] = False
    #: the DirectML EP's expectations are those of lavapipe (``dml_wine.WineDmlLane``): never this device
    shipped: ClassVar[Shipped] = Shipped("dml-lavapipe.yaml", "lavapipe", device_named("lavapipe", "llvmpipe"))

    def io_device(self) -> tuple[str, int] | None:
        return ("dml", int(self.options.get("device_id", 0)))


#: plugin libraries registered in this process: library path -> registration name
_registered: dict[str, str] = {}


@dataclass
class PluginLane(OrtLane):
    """An EP from a plugin library, registered with the installed onnxruntime at run time."""
    library: str | None = None    # plugin library path

    def ep_argument(self) -> str:
        return f"plugin:{self.library}" if self.library else self.key

    def devices(self):
        """The EP's devices (``onnxruntime.get_ep_devices()``), its library registered first."""
        import onnxruntime as ort
        reg = self.library
        if reg not in _registered:
            name = self.ep_name or os.path.basename(reg)
            try:
                ort.register_execution_provider_library(name, reg)
            except Exception as e:   # already registered, or a broken library
                if "already" not in str(e).lower():
                    raise ProviderError(f"could not register plugin EP library {reg}: {e}") from None
            _registered[reg] = name
        devs = list(ort.get_ep_devices())
        if self.ep_name:
            return [d for d in devs if d.ep_name == self.ep_name]
        known = {"CPUExecutionProvider"}
        return [d for d in devs if d.ep_name not in known]

    def check(self) -> None:
        """A device of the EP must be listed here; the EP's name comes from it when not given."""
        devices = self.devices()
        if not devices:
            raise ProviderError(f"{self.ep_name or 'the plugin EP'} ({self.package}) lists no device on this machine "
                                "(onnxruntime.get_ep_devices() has none for it)")
        if not self.ep_name:
            self.ep_name = devices[0].ep_name

    def session_options(self, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        so = super().session_options(side_is_ep=side_is_ep, optimization=optimization, threads=threads)
        if side_is_ep:
            devices = self.devices()
            if self.unit is not None:          # the one device the lane is bound to
                devices = devices[int(self.unit["index"]):int(self.unit["index"]) + 1]
            so.add_provider_for_devices(devices, self._provider_options())
        return so

    def host_devices(self) -> list[dict]:
        out = []
        for i, d in enumerate(self.devices()):
            meta = dict(d.device.metadata)
            name = (meta.get("Description") or meta.get("description") or meta.get("DeviceName")
                    or f"{d.device.vendor or 'vendor 0x%04x' % d.device.vendor_id} device 0x{d.device.device_id:04x}")
            out.append({"index": i, "name": name, "uuid": meta.get("UUID") or meta.get("LUID") or meta.get("uuid", ""),
                        "pci_bus_id": meta.get("pci_bus_id") or meta.get("PciBusId", "")})
        return out

    def make_session(self, model: bytes, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        import onnxruntime as ort
        so = self.session_options(side_is_ep=side_is_ep, optimization=optimization, threads=threads)
        if not side_is_ep or self.is_cpu:
            return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return session_class()(model, so)

    def environment(self) -> dict:
        env = super().environment()
        try:
            devs = self.devices()
            if self.unit is not None:
                devs = devs[int(self.unit["index"]):]
            if devs:
                d = devs[0]
                env["device"] = (f"{d.device.vendor or 'vendor 0x%04x' % d.device.vendor_id} "
                                 f"device 0x{d.device.device_id:04x} ({str(d.device.type).split('.')[-1]})")
                meta = dict(d.device.metadata)
                meta.update({f"ep.{k}": v for k, v in dict(d.ep_metadata).items()})
                env["device_metadata"] = meta
                env["driver"] = meta.get("Driver") or meta.get("driver") or meta.get("ep.version", "")
                env.update({k: v for k, v in nvidia().items() if k == "driver" and not env["driver"]})
                desc = meta.get("Description") or meta.get("description") or meta.get("DeviceName")
                if desc:
                    env["device"] = desc
        except Exception as e:  # device listing is informative only
            env["device_error"] = str(e)
        return env

    def device_memory_info(self):
        import onnxruntime as ort
        devs = self.devices()
        if not devs:
            return None
        return devs[0].memory_info(ort.OrtDeviceMemoryType.DEFAULT)

    def io_device(self) -> tuple[str, int] | None:
        if "webgpu" in (self.ep_name or "").lower():
            return ("webgpu", 0)
        return None


@dataclass
class WebGpuLane(PluginLane):
    """WebGPU from the onnxruntime-ep-webgpu package: a plugin library that package holds."""

    @classmethod
    def resolve(cls, entry: Entry, options: dict) -> "WebGpuLane":
        try:
            mod = importlib.import_module("onnxruntime_ep_webgpu")
        except ImportError:
            raise ProviderError(f"{entry.ep_name} is not available: install {entry.package}") from None
        lane = cls(entry.key, mod.get_ep_name(), f"onnxruntime-ep-webgpu {md.version('onnxruntime-ep-webgpu')}",
                   options, entry.howto, library=mod.get_library_path())
        lane.check()
        return lane


# ----------------------------------------------------------------------------------------------
# Resolving
# ----------------------------------------------------------------------------------------------

def resolve_other(raw: str, options: dict) -> OrtLane | None:
    """Any other EP built into the installed package, by its provider name; None when there is none."""
    import onnxruntime as ort
    if raw in ort.get_available_providers():
        return OrtLane(raw, raw, "%s %s" % ort_package(), options)
    return None


_SESSION_CLASS = None


def session_class():
    """``onnxruntime.InferenceSession`` without its silent retry: where the EP cannot create the
    session (TensorRT's libraries missing, say), the Python API prints an "EP Error ... Falling back
    to ['CPUExecutionProvider']" banner on stdout and retries on other EPs; here the EP's error is
    raised instead (the verdict's reason), and nothing is printed."""
    global _SESSION_CLASS
    if _SESSION_CLASS is None:
        import onnxruntime as ort

        class Session(ort.InferenceSession):
            def _create_inference_session(self, *args, **kwargs):
                self._enable_fallback = False
                return super()._create_inference_session(*args, **kwargs)

        _SESSION_CLASS = Session
    return _SESSION_CLASS


#: the session check's model: MaxPool 2x2 over a 1x1x4x4 float32 input, and its known answer
CHECK_INPUT = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
CHECK_ANSWER = np.array([[[[5, 7], [13, 15]]]], dtype=np.float32)


def _check_model() -> bytes:
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2], name="check")
    graph = helper.make_graph([node], "session_check", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    return model.SerializeToString()


def check_session(lane: OrtLane) -> None:
    """A session of the check model really opens on the lane's EP (CPU fallback off) and gives the
    known answer; PreflightError (its first line the EP's own words) otherwise."""
    try:
        sess = lane.make_session(_check_model(), side_is_ep=True)
        got = sess.run(["Y"], {"X": CHECK_INPUT})[0]
    except Exception as e:  # noqa: BLE001 - the EP's words are the answer
        text = " ".join(str(e).split())
        raise PreflightError(f"{lane.ep_name} is listed by {lane.package} but no session opens on it here: "
                             f"{text[:400]}") from None
    if not np.array_equal(got, CHECK_ANSWER):
        raise PreflightError(f"{lane.ep_name}: the session check's MaxPool gave {got.reshape(-1).tolist()}, "
                             f"not {CHECK_ANSWER.reshape(-1).tolist()}")


def resolve_plugin(path: str, ep_name: str | None, options: dict, howto: str = "") -> PluginLane:
    """A plugin EP library given by path (``plugin:PATH[:EpName]``)."""
    if not os.path.isfile(path):
        raise ProviderError(f"plugin EP library {path!r} does not exist")
    lane = PluginLane("plugin", ep_name or "", f"plugin library {path}", options, howto, library=path)
    lane.check()
    return lane


# ----------------------------------------------------------------------------------------------
# The backend (inside the worker)
# ----------------------------------------------------------------------------------------------

class OrtBackend:
    """ONNX Runtime in this process."""

    def __init__(self, lane: OrtLane, cfg: RunConfig):
        self.lane, self.cfg = lane, cfg
        self.ep_name = lane.ep_name
        self.is_cpu = lane.is_cpu
        self.cpu_build = "same onnxruntime package, CPUExecutionProvider"
        #: the device-fault test hook (``base.DEVICE_FAULT_ENV``): this lane's device answers with a bit flipped
        self.fault = lane.device_fault()

    def run_many(self, jobs: list[tuple]) -> list[Outcome]:
        return [self.run(*j) for j in jobs]

    def run(self, model: bytes, feeds: dict, output_names: list[str], side: str, repeat: int = 1) -> Outcome:
        t0 = time.perf_counter()
        try:
            sess = self.lane.make_session(model, side_is_ep=(side == "ep"), optimization=self.cfg.optimization,
                                          threads=self.cfg.threads)
        except Exception as e:  # noqa: BLE001 - the EP's own words are the verdict's reason
            text = str(e)
            stage = "load" if ("IR version" in text or "opset" in text.lower() and "support" in text.lower()) else "session"
            return Outcome(False, stage, text, session_ms=(time.perf_counter() - t0) * 1e3)
        t1 = time.perf_counter()
        assignment = V.assignment_of(sess)
        try:
            outs = sess.run(output_names, feeds)
        except Exception as e:  # noqa: BLE001
            return Outcome(False, "run", str(e), assignment=assignment, session_ms=(t1 - t0) * 1e3,
                           run_ms=(time.perf_counter() - t1) * 1e3)
        t2 = time.perf_counter()
        runs = []
        for _ in range(repeat - 1):          # the same session again: nondeterminism shows between runs
            try:
                runs.append(dict(zip(output_names, sess.run(output_names, feeds))))
            except Exception as e:  # noqa: BLE001 - a run that raises is that run's answer
                runs.append(str(e) or type(e).__name__)
        outputs = dict(zip(output_names, outs))
        if side == "ep" and self.fault:
            outputs = _flip_faulted(outputs)
            runs = [r if isinstance(r, str) else _flip_faulted(r) for r in runs]
        return Outcome(True, "done", None, outputs, assignment, (t1 - t0) * 1e3, (t2 - t1) * 1e3, runs=runs or None)

    def close(self) -> None:
        pass


def _flip_faulted(outputs: dict) -> dict:
    """The device-fault test hook: the lowest bit of the first byte of each output flipped."""
    out = {}
    for k, a in outputs.items():
        a = np.array(a, copy=True)
        if a.size:
            a.reshape(-1).view(np.uint8)[0] ^= 1
        out[k] = a
    return out
