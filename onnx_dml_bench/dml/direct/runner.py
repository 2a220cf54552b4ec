"""Python client of the direct DirectML lane: one long-lived harness process under Wine.

``DirectRunner`` starts ``harness.exe`` (see harness.c) with the stack's Wine environment and the
DirectML.dll of the stack's onnxruntime-node package (the DLL the ``--ep dml`` lane uses), then
sends it one request per descriptor. Tensor data goes through raw files in a private work folder;
requests and answers are single lines on the harness's stdin/stdout.

A request that crashes the harness gives a result with stage ``"crash"``, one that takes longer
than ``timeout_s`` a result with stage ``"timeout"`` (the process is killed); the next request
starts a fresh process. A request that DirectML rejects gives ``ok=False`` with ``stage`` naming
the failing call (``CreateOperator``, ``CompileOperator``, ...) and the HRESULT in ``error``.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ... import registry
from ...dtypes import DML_TO_NUMPY, FEATURE_LEVELS
from ...ops.base import DescriptorError, Field
from ..wine import session
from ..wine.pe import pe_version
from ..wine.stackinfo import VKD3D_CONFIG, StackError, StackInfo
from .build import ensure_built

PREFIX = "@@odb "


class DirectError(StackError):
    """The harness cannot be built or started; the message says why."""

    def __init__(self, message: str, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable   # the process died before reporting: worth one more start


@dataclass
class DirectResult:
    ok: bool
    stage: str                     # "done", a DirectML/D3D12 call name, "descriptor", "input",
                                   # "start", "crash" or "timeout"
    error: str | None
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    timings_ms: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)   # the harness's answer as sent


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------

@dataclass
class _Prepared:
    op_type: int                            # the DML_OPERATOR_TYPE value
    line_fields: list[str]                  # the desc's members, in directml.h order
    inputs: list[np.ndarray | None]         # per harness input slot (None: an optional input left out)
    outputs: list[tuple[str | None, np.dtype | None, tuple[int, ...]]]   # per harness output slot


#: the harness's kind of each field kind (harness.c, parse_request)
WIRE_KINDS = {"uint": "u", "int": "i", "float": "f", "bool": "b", "enum": "e", "uints": "ua", "ints": "ia",
              "size2d": "s2"}


def wire_field(f: Field) -> str:
    """One member of the operator desc as the harness reads it: ``Name=kind:value``."""
    if f.kind == "tensor":
        kind = "in" if f.role == "input" else "out"
        text = "null" if not f.present else f"{f.dtype}:" + ",".join(str(int(s)) for s in f.sizes)
    else:
        kind = WIRE_KINDS[f.kind]
        v = f.value
        if f.kind in ("uints", "ints", "size2d"):
            text = ",".join(str(int(x)) for x in v)
        elif f.kind == "bool":
            text = "1" if v else "0"
        elif f.kind == "float":
            text = repr(float(v))
        elif f.kind == "enum":
            text = str(f.number)
        else:
            text = str(int(v))
    if not text or any(c.isspace() for c in text):
        raise DescriptorError(f.name, f"value {text!r} cannot be sent to the harness")
    return f"{f.name}={kind}:{text}"


def wire_request(rid: int, op_type: int, tokens: list[str], command: str = "run") -> str:
    """A request line: ``run`` (or ``debug pack``, which echoes the packed desc instead) of request
    ``rid``, operator type ``op_type`` and the desc's members ``tokens`` (:func:`wire_field`)."""
    return " ".join([command, str(rid), str(op_type), *tokens])


def _tensors(fields: list[Field], role: str) -> list[Field]:
    return [f for f in fields if f.kind == "tensor" and f.role == role]


def _output_slots(fields: list[Field]) -> list[tuple[str | None, np.dtype | None, tuple[int, ...]]]:
    """Per output slot of the harness: the case's output name, its dtype (None: left out), its shape."""
    return [(f.tensor, DML_TO_NUMPY[f.dtype] if f.present else None, tuple(f.sizes)) for f in _tensors(fields, "output")]


def _prepare(op_key: str, desc, inputs: Mapping[str, np.ndarray]) -> _Prepared:
    """Descriptor (dataclass or its to_dict()) + inputs -> what the harness needs."""
    op = registry.get(op_key)
    key = op.key
    if isinstance(desc, Mapping):
        desc = op.Desc.from_dict(dict(desc))
    fields = op.layout(desc)
    for f in _tensors(fields, "output"):
        if f.present and any(s < 0 for s in f.sizes):
            raise DescriptorError(f"{f.name}.Sizes", f"negative output size {list(f.sizes)}")
    op_type = op.dml_type_number
    tokens = [wire_field(f) for f in fields]
    arrays: list[np.ndarray | None] = []
    shapes = op.input_shapes(desc)   # the case's input arrays
    for f in _tensors(fields, "input"):   # in harness slot order
        if not f.present:
            arrays.append(None)
            continue
        name = f.tensor
        if name not in inputs:
            raise ValueError(f"missing input {name!r} (inputs of {key}: {', '.join(shapes)})")
        a = np.asarray(inputs[name])
        shape = tuple(shapes.get(name, f.sizes))
        if a.shape != shape:
            raise ValueError(f"input {name!r} has shape {list(a.shape)}, the descriptor says {list(shape)}")
        a = _as_tensor_type(name, a, f.dtype)
        arrays.append(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")))
    return _Prepared(op_type, tokens, arrays, _output_slots(fields))


def _as_tensor_type(name: str, a: np.ndarray, dml_type: str) -> np.ndarray:
    """Input ``a`` in its tensor's DML type: as it is, or an integer array (an ONNX graph's INT64
    batch indices) converted to the tensor's integer type when every value fits; ValueError else."""
    want = DML_TO_NUMPY[dml_type]
    if a.dtype == want:
        return a
    if a.dtype.kind in "iu" and want.kind in "iu":
        lo, hi = np.iinfo(want).min, np.iinfo(want).max
        if a.size == 0 or (int(a.min()) >= lo and int(a.max()) <= hi):
            return a.astype(want)
        raise ValueError(f"input {name!r} holds values outside {dml_type}'s range [{lo}, {hi}]: it cannot be the "
                         "tensor's data")
    raise ValueError(f"input {name!r} is {a.dtype}, the descriptor's DataType is {dml_type}")


# --------------------------------------------------------------------------------------------
# Process
# --------------------------------------------------------------------------------------------

class _Harness:
    """One harness process: its pipes, reader threads and work folder."""

    def __init__(self, stack: StackInfo, exe: Path, workdir: Path, start_timeout_s: float):
        with session.lock:
            display = session.start_xvfb(stack)
            session.ensure_wineserver(stack)
        env = stack.env(display=display)
        env["VKD3D_CONFIG"] = VKD3D_CONFIG   # without it the first dispatch takes seconds on lavapipe
        dll = Path(stack.directml_dll)
        cmd = [stack.wine, str(exe), "--dll", session.win_path(dll), "--workdir", session.win_path(workdir)]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, cwd=str(workdir), start_new_session=True)
        except OSError as e:
            raise DirectError(f"cannot start {stack.wine}: {e}") from None
        self.lines: queue.Queue = queue.Queue()
        self.stderr: collections.deque = collections.deque(maxlen=200)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.info = self._wait_ready(start_timeout_s)

    def _read_stdout(self) -> None:
        for raw in self.proc.stdout:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if text.startswith(PREFIX):
                self.lines.put(text[len(PREFIX):])
            else:
                self.stderr.append(text)
        self.lines.put(None)   # EOF: the process is gone

    def _read_stderr(self) -> None:
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def _wait_ready(self, timeout_s: float) -> dict:
        try:
            answer = self.next_answer(timeout_s)
        except TimeoutError:
            self.kill()
            raise DirectError(f"the direct-lane harness did not report ready within {timeout_s:g} s: "
                              + self.death_note()) from None
        if answer is None or not answer.get("ready"):
            self.kill()
            if answer is None:
                raise DirectError("the direct-lane harness did not start: " + self.death_note(), retryable=True)
            raise DirectError(f"the direct-lane harness could not create its devices: {answer.get('stage')} "
                              f"failed with {answer.get('hr')} {answer.get('hr_name', '')}: {answer.get('error')}")
        return answer

    def next_answer(self, timeout_s: float) -> dict | None:
        """The next answer; None when the process ended; raises TimeoutError."""
        try:
            line = self.lines.get(timeout=max(0.01, timeout_s))
        except queue.Empty:
            raise TimeoutError from None
        if line is None:
            self.lines.put(None)   # keep reporting EOF
            return None
        try:
            return json.loads(line)
        except ValueError:
            return {"ok": False, "stage": "protocol", "error": f"unreadable answer: {line[:300]}"}

    def send(self, line: str) -> bool:
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def death_note(self) -> str:
        try:
            rc = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        tail = "\n".join(list(self.stderr)[-20:])
        return f"process exited with code {rc}" + (f"\n{tail}" if tail else "")

    def kill(self) -> None:
        session.kill_group(self.proc)

    def close(self) -> None:
        if self.alive() and self.send("quit"):
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


# --------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------

class DirectRunner:
    """Runs DirectML operator descriptors straight through DirectML.dll (no ONNX Runtime).

    ``with DirectRunner(stack) as r: res = r.run("max_pooling2", desc, {"X": x})`` (``stack``: the
    caller's choice, e.g. ``select.select_stack(options)``). Not thread-safe: one request at a time per
    runner.
    """

    def __init__(self, stack: StackInfo, exe: str | os.PathLike | None = None,
                 timeout_s: float = 60.0, start_timeout_s: float = 120.0, log=None):
        self.stack = stack
        self.exe = Path(exe) if exe else None
        self.timeout_s = float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.log = log or (lambda msg: None)
        self.workdir = Path(tempfile.mkdtemp(prefix="odb-direct-"))
        self.restarts = 0
        self._h: _Harness | None = None
        self._next_id = 0
        self._info: dict | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "DirectRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._h is not None:
            self._h.close()
            self._h = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _harness(self) -> _Harness:
        if self._h is not None and self._h.alive():
            return self._h
        if self._h is not None:
            self._h.kill()
            self.restarts += 1
        if self.exe is None:
            self.exe = ensure_built(self.stack, log=self.log)
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._h = _Harness(self.stack, self.exe, self.workdir, self.start_timeout_s)
        except DirectError as e:
            # e.g. started while Wine was still tearing down a killed process: one more start
            if not e.retryable:
                raise
            self.log(f"harness start failed, retrying once: {e}")
            time.sleep(1.0)
            self._h = _Harness(self.stack, self.exe, self.workdir, self.start_timeout_s)
        return self._h

    # -- device ------------------------------------------------------------------------------
    def device_info(self) -> dict:
        """Adapter, DirectML.dll version, max feature level and per-data-type support, as DirectML
        reports them (IDMLDevice::CheckFeatureSupport)."""
        if self._info is None:
            ready = dict(self._harness().info)
            dll = Path(self.stack.directml_dll)
            try:
                ready["dml_version"] = pe_version(dll)
            except (OSError, ValueError) as e:
                ready["dml_version"] = {"error": str(e)}
            ready["dml_dll_path"] = str(dll)
            ready["harness"] = str(self.exe)
            ready["stack_versions"] = dict(self.stack.versions)
            self._info = ready
        return self._info

    def unsupported(self, op_key: str, desc) -> str | None:
        """Why DirectML itself says it cannot run ``desc`` (the data type of one of its tensors, as
        the operator's layout declares them, reported unsupported; a feature level above its
        maximum), or None."""
        op = registry.get(op_key)
        if isinstance(desc, Mapping):
            desc = op.Desc.from_dict(dict(desc))
        info = self.device_info()
        for f in op.layout(desc):
            if f.kind == "tensor" and f.present and not info["dtypes"].get(f.dtype, False):
                return f"DirectML reports {f.dtype} ({f.name}) unsupported (DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT)"
        level, top = getattr(desc, "FeatureLevel", None), info.get("max_feature_level")
        if level in FEATURE_LEVELS and top and _level_tuple(level) > _level_tuple(top):
            return f"descriptor needs feature level {level}; DirectML reports at most {top}"
        return None

    # -- running -----------------------------------------------------------------------------
    def run(self, op_key: str, desc, inputs: Mapping[str, np.ndarray]) -> DirectResult:
        """Run one descriptor. ``desc``: the operator's descriptor dataclass or its ``to_dict()``."""
        try:
            prep = _prepare(op_key, desc, inputs)
        except (DescriptorError, KeyError, TypeError) as e:
            return DirectResult(False, "descriptor", f"{type(e).__name__}: {e}")
        except ValueError as e:
            return DirectResult(False, "input", str(e))
        try:
            h = self._harness()
        except StackError as e:
            return DirectResult(False, "start", str(e))
        self._next_id += 1
        return self._exchange(h, self._next_id, prep)

    def run_many(self, jobs: Iterable[tuple[str, Any, Mapping[str, np.ndarray]]]) -> list[DirectResult]:
        """``run`` over (op_key, desc, inputs) triples, in one harness process while it lives."""
        return [self.run(op_key, desc, inputs) for op_key, desc, inputs in jobs]

    def _exchange(self, h: _Harness, rid: int, prep: _Prepared) -> DirectResult:
        files = [self.workdir / f"r{rid}_in{k}.bin" for k in range(len(prep.inputs))]
        outs = [self.workdir / f"r{rid}_out{k}.bin" for k in range(len(prep.outputs))]
        try:
            for a, f in zip(prep.inputs, files):
                if a is not None:
                    a.tofile(f)
            t0 = time.monotonic()
            if not h.send(wire_request(rid, prep.op_type, prep.line_fields)):
                return DirectResult(False, "crash", "harness not accepting requests: " + h.death_note())
            answer = self._answer_for(h, rid)
            wall = (time.monotonic() - t0) * 1000
            if isinstance(answer, DirectResult):
                answer.timings_ms.setdefault("wall", wall)
                return answer
            return self._result(answer, prep, outs, wall)
        finally:
            for f in files + outs:
                f.unlink(missing_ok=True)

    def _answer_for(self, h: _Harness, rid: int) -> dict | DirectResult:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                answer = h.next_answer(deadline - time.monotonic())
            except TimeoutError:
                h.kill()
                return DirectResult(False, "timeout", f"no answer within {self.timeout_s:g} s; harness killed")
            if answer is None:
                return DirectResult(False, "crash", "harness died during the request: " + h.death_note())
            if answer.get("id") == rid:
                return answer

    @staticmethod
    def _result(answer: dict, prep: _Prepared, outs: list[Path], wall: float) -> DirectResult:
        timings = dict(answer.get("timings_ms", {}), wall=wall)
        if not answer.get("ok"):
            err = f"{answer.get('stage')} failed: HRESULT {answer.get('hr')} {answer.get('hr_name', '')}".rstrip()
            if answer.get("error"):
                err += f" ({answer['error']})"
            return DirectResult(False, str(answer.get("stage")), err, {}, timings, answer)
        arrays = {}
        written = answer.get("outputs", [])
        for k, (name, dtype, shape) in enumerate(prep.outputs):
            if k < len(written) and written[k] and dtype is not None:
                arrays[name] = np.fromfile(outs[k], dtype=dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)
        return DirectResult(True, "done", None, arrays, timings, answer)

    # -- test hooks --------------------------------------------------------------------------
    def pack(self, op_type: int, fields: list[Field]) -> dict:
        """The operator desc the harness packs from ``fields`` (``debug pack``): its size and, per
        member, [name, kind, offset, size, the value read back through the packed bytes]."""
        h = self._harness()
        self._next_id += 1
        h.send(wire_request(self._next_id, op_type, [wire_field(f) for f in fields], "debug pack"))
        answer = self._answer_for(h, self._next_id)
        if isinstance(answer, DirectResult):
            raise DirectError(f"debug pack: {answer.stage}: {answer.error}")
        return answer

    def debug(self, what: str) -> DirectResult:
        """Make the harness crash (``"crash"``) or hang (``"hang"``), to test recovery."""
        h = self._harness()
        self._next_id += 1
        h.send(f"debug {what}")
        answer = self._answer_for(h, self._next_id)
        return answer if isinstance(answer, DirectResult) else DirectResult(False, "protocol", str(answer))


def _level_tuple(level: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(level).split("."))
