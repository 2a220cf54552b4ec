"""ONNX fixtures: cases exported in the layout of ONNX's backend tests, with their metadata.

A fixture folder holds one directory per case::

    <out>/index.json                       schema version, exported cases, left-out cases + reasons
    <out>/<case-id>/model.onnx             the one-operator graph of the case
    <out>/<case-id>/test_data_set_0/input_K.pb    TensorProtos named after graph input K
    <out>/<case-id>/test_data_set_0/output_K.pb   expected graph output K (the DirectML reference)
    <out>/<case-id>/case.json              descriptor, DML operator, opset, ONNX-side options,
                                           input family/seed, comparison policy, open points
    <out>/<case-id>/data.json              {"rtol", "atol"}: read by onnx.backend.test.loader

Expected outputs come from the NumPy reference written from the DirectML documentation, never
from ONNX Runtime or ``onnx.reference``. Where the documentation leaves an answer open and a
case's data touches it, the case is left out (with the reason in ``index.json``) unless
``include_open=True``; then it is exported with the reference's policy stated in ``case.json``
(``open_points``) and ``expected_output_is_policy: true``.

Every file is written deterministically: exporting the same cases twice gives the same bytes.

``load_fixture`` reads a case directory back, refusing external data that points outside it and
naming the file when a ``.pb`` is truncated or corrupt. ``verify_fixture`` runs a case in ONNX
Runtime and compares with the rule recorded in ``case.json`` (exact, ULP or DirectML indices).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper

from . import __version__, registry, verdict
from . import compare as C
from .casefile import CaseFileError, case_from_dict
from .cases import Case
from .dtypes import DML_TO_NUMPY
from .record import jsonable
from .ops.base import Curated, OutputSpec
from .outcome import Outcome
from .lanes import graph_optimization_level
from .plan import sweep_cases

SCHEMA_VERSION = 1
INDEX_NAME = "index.json"
CASE_META = "case.json"
RUNNER_TOLERANCE = "data.json"
DATA_SET = "test_data_set_0"

INDICES_TIES = "first-occurrence"

_KIND_TEXT = {
    "exact": "Bit for bit: every element equals the expected one, NaN equals NaN (any payload); "
             "-0.0 and +0.0 differ.",
    "ulp": "Within {ulp} units in the last place of the expected value, measured on the bit "
           "patterns (-0.0 and +0.0 are 0 apart); NaN exactly where the expected output has NaN; "
           "infinities equal.",
    "bound": "Within the error bound of the computation, per element: |got - expected| <= "
             "gamma(n-1)*sum|x|/count + 2u*|expected| + n*(smallest subnormal), u = eps/2 of the data type, "
             "n the window size (any summation order in the data type or wider stays inside it); NaN "
             "exactly where the expected output has NaN; infinities equal. The largest bound over this "
             "case's elements is max_abs_error.",
    "indices": "Equal to the DirectML index: a zero-based offset into the whole input tensor seen "
               "as one flat array (batch and channel included{order}). Ties resolve to the first "
               "occurrence: the first element met in the window's row-major scan order (the "
               "smallest flat input position) wins; padding never wins.",
}
_RUNNER_NOTE = {
    "exact": "rtol=0, atol=0: values must be equal (NaN equals NaN). An rtol/atol comparison "
             "cannot tell -0.0 from +0.0; the exact rule can.",
    "ulp": "rtol = 2*{ulp}*eps and atol = {ulp}*smallest subnormal of {dtype}: the envelope of the "
           "{ulp}-ULP rule for tools that only take rtol/atol. It admits every result within {ulp} "
           "ULP and some results up to {ulp2} ULP; the ULP rule itself is the verdict "
           "(onnx_dml_bench.fixtures.verify_fixture applies it).",
    "bound": "rtol=0, atol = the largest per-element error bound of the case: the envelope of the "
             "per-element bound for tools that only take rtol/atol; the per-element bound itself is the "
             "verdict (onnx_dml_bench.fixtures.verify_fixture applies it).",
}


class FixtureError(Exception):
    """A fixture folder or file that cannot be used (unsafe, truncated, corrupt, inconsistent)."""


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------

@dataclass
class ExportSummary:
    out_dir: Path
    exported: list[dict] = field(default_factory=list)   # index entries of exported cases
    left_out: list[dict] = field(default_factory=list)   # index entries of left-out cases
    duplicates: int = 0                                   # cases given more than once

    @property
    def errors(self) -> list[dict]:
        return [e for e in self.left_out if e["status"] == "error"]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.left_out:
            out[e["status"]] = out.get(e["status"], 0) + 1
        return dict(sorted(out.items()))

    def line(self) -> str:
        parts = [f"{len(self.exported)} exported", f"{len(self.left_out)} left out"]
        detail = ", ".join(f"{n} {k}" for k, n in self.counts().items())
        if detail:
            parts[-1] += f" ({detail})"
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate(s) ignored")
        return f"fixtures: {'; '.join(parts)} -> {self.out_dir / INDEX_NAME}"


def _json_bytes(obj: Any) -> bytes:
    # a bound or tolerance can be infinite (an AveragePool sum that overflows the type): "inf"
    return (json.dumps(jsonable(obj, signed_zero=False), sort_keys=True, indent=2, allow_nan=False,
                       ensure_ascii=False) + "\n").encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def runner_tolerance(spec, dml_type: str, bound: float | None = None) -> dict:
    """rtol/atol for tools that compare with ``|got - want| <= atol + rtol*|want|`` (ONNX's
    backend runner, numpy.testing.assert_allclose): 0/0 for exact outputs; for an N-ULP output,
    rtol = 2*N*eps and atol = N*smallest subnormal, which admit every result within N ULP; for a
    'bound' output, atol = the largest per-element bound ``bound``."""
    if spec.kind == "bound":
        return {"rtol": 0.0, "atol": float(bound or 0.0)}
    if spec.kind != "ulp":
        return {"rtol": 0.0, "atol": 0.0}
    fi = np.finfo(DML_TO_NUMPY[dml_type])
    return {"rtol": float(2 * spec.ulp * fi.eps), "atol": float(spec.ulp * fi.smallest_subnormal)}


def _compare_meta(spec, dml_type: str, storage_order: int, bound: float | None = None) -> dict:
    d: dict = {"kind": spec.kind}
    if spec.kind == "bound":
        d["max_abs_error"] = float(bound or 0.0)
        d["description"] = _KIND_TEXT["bound"]
    elif spec.kind == "ulp":
        d["ulp"] = spec.ulp
        d["description"] = _KIND_TEXT["ulp"].format(ulp=spec.ulp)
    elif spec.kind == "indices":
        d["values_of"] = spec.values_of
        d["ties"] = INDICES_TIES
        d["storage_order"] = storage_order
        order = "; storage_order=1: the spatial part of the offset is column-major, as ONNX defines it" \
            if storage_order else ""
        d["description"] = _KIND_TEXT["indices"].format(order=order)
    else:
        d["description"] = _KIND_TEXT["exact"]
    d["runner_tolerance"] = runner_tolerance(spec, dml_type, bound)
    return d


def _runner_tolerance_for(specs: dict, dml_type: str, bounds: dict[str, float]) -> dict:
    """One rtol/atol pair per model (ONNX's runner takes one): the loosest over the outputs."""
    tols = [runner_tolerance(s, dml_type, bounds.get(k)) for k, s in specs.items()]
    rtol = max((t["rtol"] for t in tols), default=0.0)
    atol = max((t["atol"] for t in tols), default=0.0)
    ulps = [s.ulp for s in specs.values() if s.kind == "ulp"]
    if any(s.kind == "bound" for s in specs.values()):
        note = _RUNNER_NOTE["bound"]
    elif ulps:
        n = max(ulps)
        note = _RUNNER_NOTE["ulp"].format(ulp=n, ulp2=2 * n, dtype=dml_type)
    else:
        note = _RUNNER_NOTE["exact"]
    return {"rtol": rtol, "atol": atol, "note": note}


def _left(case: Case, status: str, reason: str, **extra) -> dict:
    d = {"id": case.id, "op": case.op, "dtype": case.dtype, "opset": case.opset, "family": case.family,
         "status": status, "reason": reason}
    d.update(extra)
    return d


def _prepare_out_dir(out: Path) -> None:
    """Make ``out`` ready for an export: create it, or clear the case folders a previous export
    listed in its index. Refuse a non-empty folder that is not a fixture folder (a directory not
    listed by its index), so that an export never mixes with unrelated content."""
    out.mkdir(parents=True, exist_ok=True)
    previous: set[str] = set()
    index = out / INDEX_NAME
    if index.exists():
        from .safeload import UntrustedFileError, load_file, one_line
        try:
            old = load_file(index, what="fixture index")
            previous = {str(e["path"]) for e in old.get("cases", [])}
        except UntrustedFileError as e:
            raise FixtureError(f"{e}; choose an empty output folder") from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise FixtureError(one_line(f"{index}: not a fixture index ({e}); choose an empty output folder")) from None
    unknown = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name not in previous)
    if unknown:
        raise FixtureError(f"{out}: holds directories that no previous export listed ({', '.join(unknown[:5])}"
                           f"{', ...' if len(unknown) > 5 else ''}); choose an empty output folder")
    for name in sorted(previous):
        target = out / name
        if PurePosixPath(name).name != name or name in ("", ".", ".."):
            raise FixtureError(f"{index}: case path {name!r} is not a plain folder name")
        if target.is_symlink():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
    if index.exists():
        index.unlink()


def _export_one(case: Case, out: Path, include_open: bool, note: str | None) -> tuple[dict | None, dict | None]:
    """(index entry, None) if exported, (None, left-out entry) if not."""
    op = case.operator
    admitted = op.admit(case, size=False, data=False)
    if admitted.step == "descriptor":
        return None, _left(case, "invalid", f"descriptor rejected: {admitted.detail}")
    if admitted.step == "expressible":
        return None, _left(case, "not-expressible", f"not expressible at opset {case.opset}: {admitted.detail}")
    try:
        inputs = case.inputs()
        points = tuple(op.open_points(case, inputs))
        if points and not include_open:
            texts = "; ".join(f"{k}: {op.open_point_texts.get(k, k)}" for k in points)
            return None, _left(case, "open-point",
                               "the data touches behaviour the DirectML documentation leaves open, so the "
                               f"reference output would be a policy, not a documented truth ({texts}). "
                               "Export with include_open=True to get it with the policy stated.",
                               open_points=list(points))
        expected = op.expected(case, inputs)
        model = op.to_onnx(case)
        _stamp(model, case, op)
        onnx.checker.check_model(model)
        specs = op.compare_specs(case)
        bounds = {k: float(np.max(v)) if np.size(v) else 0.0 for k, v in op.error_bound(case, inputs, expected).items()}
        files_in, files_out = _tensors(case, model, inputs, expected)
    except (ValueError, TypeError, KeyError, IndexError, onnx.checker.ValidationError) as e:
        return None, _left(case, "error", f"{type(e).__name__}: {e}")

    case_dir = out / case.id
    _write(case_dir / "model.onnx", model.SerializeToString(deterministic=True))
    for rel, proto in files_in + files_out:
        _write(case_dir / rel, proto.SerializeToString(deterministic=True))

    storage_order = int(case.v.get("storage_order", 0))
    outputs_meta = []
    for rel, proto in files_out:
        local = _local_name(proto.name)
        outputs_meta.append({
            "name": proto.name, "file": rel, "shape": list(proto.dims),
            "dtype": helper.tensor_dtype_to_np_dtype(proto.data_type).name,
            "compare": _compare_meta(specs[local], case.dtype, storage_order, bounds.get(local)),
        })
    runner = _runner_tolerance_for(specs, case.dtype, bounds)
    opens = {k: op.open_point_texts.get(k, k) for k in points}
    meta = {
        "schema_version": SCHEMA_VERSION,
        "bench_version": __version__,
        "id": case.id,
        "op": case.op,
        "dml_operator": op.dml_name,
        "descriptor": case.desc.to_dict(),
        "data_type": case.dtype,
        "onnx": {"opset": case.opset, "ir_version": model.ir_version,
                 "op_types": sorted({n.op_type for n in model.graph.node}),
                 "options": case.v},
        "inputs": {"family": case.family, "seed": case.seed, "explicit_values": case.values is not None,
                   "tensors": [{"name": p.name, "file": rel, "shape": list(p.dims),
                                "dtype": helper.tensor_dtype_to_np_dtype(p.data_type).name}
                               for rel, p in files_in]},
        "outputs": outputs_meta,
        "expected_from": "onnx_dml_bench NumPy reference of the DirectML semantics",
        "runner_tolerance": runner,
        "open_points": opens,
        "expected_output_is_policy": bool(points),
        "case": case.to_dict(),
    }
    if note:
        meta["note"] = note
    _write(case_dir / CASE_META, _json_bytes(meta))
    _write(case_dir / RUNNER_TOLERANCE, _json_bytes({"rtol": runner["rtol"], "atol": runner["atol"]}))
    entry = {
        "id": case.id, "op": case.op, "dml_operator": op.dml_name, "dtype": case.dtype, "opset": case.opset,
        "family": case.family, "path": case.id,
        "tolerance": {"outputs": {o["name"]: {k: v for k, v in o["compare"].items() if k != "description"}
                                  for o in outputs_meta},
                      "rtol": runner["rtol"], "atol": runner["atol"]},
        "open_points": sorted(opens),
        "expected_output_is_policy": bool(points),
    }
    return entry, None


def _stamp(model: onnx.ModelProto, case: Case, op) -> None:
    """Record the case in the model itself (deterministic; no time stamps)."""
    model.doc_string = f"{op.dml_name} case {case.id} (expected outputs: DirectML reference)"
    helper.set_model_props(model, {"onnx_dml_bench.case_id": case.id, "onnx_dml_bench.dml_operator": op.dml_name,
                                   "onnx_dml_bench.version": __version__})


def _local_name(graph_name: str) -> str:
    return graph_name   # models of single cases are built with an empty prefix


def _tensors(case: Case, model: onnx.ModelProto, inputs: dict, expected: dict):
    init = {t.name for t in model.graph.initializer}
    files_in = []
    graph_inputs = [i for i in model.graph.input if i.name not in init]
    if sorted(i.name for i in graph_inputs) != sorted(inputs):
        raise ValueError(f"graph inputs {[i.name for i in graph_inputs]} do not match case inputs {sorted(inputs)}")
    for k, vi in enumerate(graph_inputs):
        arr = np.ascontiguousarray(inputs[_local_name(vi.name)])
        _check_against(vi, arr, f"input {vi.name}")
        files_in.append((f"{DATA_SET}/input_{k}.pb", numpy_helper.from_array(arr, vi.name)))
    files_out = []
    if sorted(o.name for o in model.graph.output) != sorted(expected):
        raise ValueError(f"graph outputs {[o.name for o in model.graph.output]} do not match reference outputs {sorted(expected)}")
    for k, vi in enumerate(model.graph.output):
        arr = np.ascontiguousarray(expected[_local_name(vi.name)])
        _check_against(vi, arr, f"expected output {vi.name}")
        files_out.append((f"{DATA_SET}/output_{k}.pb", numpy_helper.from_array(arr, vi.name)))
    return files_in, files_out


def _check_against(vi: onnx.ValueInfoProto, arr: np.ndarray, what: str) -> None:
    tt = vi.type.tensor_type
    want = helper.tensor_dtype_to_np_dtype(tt.elem_type)
    if arr.dtype != want:
        raise ValueError(f"{what}: dtype {arr.dtype} but the graph declares {want}")
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
    if len(dims) != arr.ndim or any(d is not None and d != s for d, s in zip(dims, arr.shape)):
        raise ValueError(f"{what}: shape {list(arr.shape)} but the graph declares {dims}")


def export(cases: Iterable[Case], out_dir: str | os.PathLike, *, log: Callable[[str], None] | None = None,
           include_open: bool = False, notes: dict[str, str] | None = None) -> ExportSummary:
    """Write ``cases`` as ONNX backend-test fixtures under ``out_dir`` and an ``index.json``.

    Left out, with their reason in the index: cases whose descriptor or ONNX-side options are
    invalid, cases not expressible at their opset, and (unless ``include_open``) cases whose
    data touch a behaviour the DirectML documentation leaves open. ``notes``: optional case id
    -> sentence stored in case.json (what the case is for). ``log``: called with one line per
    case. Returns an :class:`ExportSummary`; files are byte-identical from run to run.
    """
    out = Path(out_dir)
    say = log or (lambda _msg: None)
    notes = notes or {}
    unique: dict[str, Case] = {}
    dups = 0
    for c in cases:
        prev = unique.get(c.id)
        if prev is not None:
            if prev != c:
                raise FixtureError(f"two different cases share the id {c.id}")
            dups += 1
            continue
        unique[c.id] = c
    _prepare_out_dir(out)
    summary = ExportSummary(out_dir=out, duplicates=dups)
    for cid in sorted(unique):
        entry, left = _export_one(unique[cid], out, include_open, notes.get(cid))
        if entry is not None:
            summary.exported.append(entry)
            say(f"exported {cid}" + (" (expected output is a policy)" if entry["expected_output_is_policy"] else ""))
        else:
            summary.left_out.append(left)
            say(f"left out {cid}: [{left['status']}] {left['reason']}")
    index = {
        "schema_version": SCHEMA_VERSION,
        "bench_version": __version__,
        "layout": "ONNX backend test: <path>/model.onnx, <path>/test_data_set_0/input_K.pb and output_K.pb "
                  "(K in graph order), <path>/case.json (metadata), <path>/data.json (rtol/atol)",
        "expected_outputs": "DirectML semantics (onnx_dml_bench NumPy reference)",
        "include_open": include_open,
        "open_point_policy": ("exported with the reference's policy stated in case.json "
                              "(expected_output_is_policy: true)") if include_open else
                             "left out (listed below with the reason)",
        "cases": summary.exported,
        "left_out": summary.left_out,
    }
    _write(out / INDEX_NAME, _json_bytes(index))
    return summary


# ---------------------------------------------------------------------------------------------
# Safe loading
# ---------------------------------------------------------------------------------------------

def _all_tensors(graph: onnx.GraphProto, where: str = "graph"):
    """(description, TensorProto) for every tensor a graph holds, subgraphs included."""
    for t in graph.initializer:
        yield f"initializer {t.name!r}", t
    for s in graph.sparse_initializer:
        yield f"sparse initializer {s.values.name!r} (values)", s.values
        yield f"sparse initializer {s.values.name!r} (indices)", s.indices
    for node in graph.node:
        for a in node.attribute:
            label = f"attribute {a.name!r} of node {node.name or node.op_type!r}"
            if a.HasField("t"):
                yield label, a.t
            for t in a.tensors:
                yield label, t
            if a.HasField("sparse_tensor"):
                yield label + " (values)", a.sparse_tensor.values
                yield label + " (indices)", a.sparse_tensor.indices
            if a.HasField("g"):
                yield from _all_tensors(a.g, label)
            for g in a.graphs:
                yield from _all_tensors(g, label)


def _within(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _safe_external_path(root: Path, what: str, location: str, file_label: str) -> Path:
    """The file that an external-data ``location`` names, if it lies inside ``root``."""
    if not location:
        raise FixtureError(f"{file_label}: {what} uses external data without a location")
    if "\x00" in location:
        raise FixtureError(f"{file_label}: {what} has an external-data location with a NUL byte: {location!r}")
    if (PurePosixPath(location).is_absolute() or PureWindowsPath(location).is_absolute()
            or PureWindowsPath(location).drive or location.startswith(("/", "\\"))):
        raise FixtureError(f"{file_label}: {what} has external data at an absolute path {location!r}; "
                           f"only paths inside {root} are accepted")
    parts = re.split(r"[\\/]+", location)
    if ".." in parts:
        raise FixtureError(f"{file_label}: {what} has external data at {location!r}, which escapes the fixture "
                           f"folder with '..'; only paths inside {root} are accepted")
    target = (root / location).resolve()
    if not _within(root, target):
        raise FixtureError(f"{file_label}: {what} has external data at {location!r}, which resolves to {target} "
                           f"outside the fixture folder {root} (a symbolic link?)")
    if not target.is_file():
        raise FixtureError(f"{file_label}: {what} has external data at {location!r}, which is not a file in {root}")
    return target


def _load_external(root: Path, tensor: TensorProto, what: str, file_label: str) -> None:
    info = {e.key: e.value for e in tensor.external_data}
    target = _safe_external_path(root, what, info.get("location", ""), file_label)
    try:
        offset = int(info.get("offset", 0) or 0)
        length = int(info["length"]) if info.get("length") else None
    except ValueError:
        raise FixtureError(f"{file_label}: {what} has a malformed external-data offset/length {info}") from None
    size = target.stat().st_size
    if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
        raise FixtureError(f"{file_label}: {what} reads bytes {offset}..{'' if length is None else offset + length} "
                           f"of {info['location']!r}, which has {size} bytes (truncated?)")
    with open(target, "rb") as f:
        f.seek(offset)
        tensor.raw_data = f.read() if length is None else f.read(length)
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def _read_inside(root: Path, path: Path, read: bool = True) -> bytes:
    real = path.resolve()
    if not _within(root, real):
        raise FixtureError(f"{path}: resolves to {real}, outside the fixture folder {root} (a symbolic link?)")
    if not read:
        return b""
    try:
        return real.read_bytes()
    except OSError as e:
        raise FixtureError(f"{path}: cannot be read: {e}") from None


def _parse_tensor(root: Path, path: Path, vi: onnx.ValueInfoProto) -> np.ndarray:
    t = TensorProto()
    try:
        t.ParseFromString(_read_inside(root, path))
    except DecodeError as e:
        raise FixtureError(f"{path}: not a valid TensorProto (truncated or corrupt file): {e}") from None
    if t.name and t.name != vi.name:
        raise FixtureError(f"{path}: holds tensor {t.name!r} but the graph's {vi.name!r} belongs here")
    if t.data_location == TensorProto.EXTERNAL:
        _load_external(root, t, f"tensor {t.name or vi.name!r}", str(path))
    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:  # numpy_helper raises ValueError, TypeError or KeyError on malformed tensors
        raise FixtureError(f"{path}: tensor data does not match its dims {list(t.dims)} "
                           f"(truncated or corrupt file): {e}") from None
    try:
        _check_against(vi, arr, "tensor")
    except ValueError as e:
        raise FixtureError(f"{path}: {e} (graph value {vi.name!r}; truncated or corrupt file?)") from None
    return arr


def load_fixture(case_dir: str | os.PathLike, data_set: int = 0):
    """Read one case directory: ``(model, inputs, outputs, meta)``.

    ``inputs`` and ``outputs`` map graph value names to arrays (in graph order); ``meta`` is the
    parsed case.json (``{}`` for a folder without one, e.g. one of ONNX's own node tests).
    Raises :class:`FixtureError` for a model whose external data lies outside the folder
    (absolute path, ``..``, a symbolic link out), for truncated or corrupt files (naming the
    file), and for tensors that do not match the graph's types and shapes.
    """
    given = Path(case_dir)
    if not given.is_dir():
        raise FixtureError(f"{given}: not a fixture directory")
    root = given.resolve()
    model_path = given / "model.onnx"
    if not model_path.exists():
        raise FixtureError(f"{model_path}: missing")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(_read_inside(root, model_path))
    except DecodeError as e:
        raise FixtureError(f"{model_path}: not a valid ONNX model (truncated or corrupt file): {e}") from None
    if not model.HasField("graph") or not model.graph.node:
        raise FixtureError(f"{model_path}: holds no graph (empty, truncated or corrupt file)")
    for what, tensor in _all_tensors(model.graph):
        if tensor.data_location == TensorProto.EXTERNAL:
            _load_external(root, tensor, f"tensor {tensor.name!r} ({what})", str(model_path))
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise FixtureError(f"{model_path}: not a valid ONNX model: {str(e).strip().splitlines()[0]}") from None

    meta: dict = {}
    meta_path = given / CASE_META
    if meta_path.exists():
        from .safeload import UntrustedFileError, loads_json, read_bytes
        _read_inside(root, meta_path, read=False)        # inside the fixture folder
        try:       # bounded: size, nesting depth; one line naming the file
            meta = loads_json(read_bytes(meta_path.resolve(), what="case metadata file"), str(meta_path))
        except UntrustedFileError as e:
            raise FixtureError(f"{e} (truncated or corrupt file?)") from None
        if not isinstance(meta, dict):
            raise FixtureError(f"{meta_path}: expected a JSON object")

    ds = given / f"test_data_set_{data_set}"
    if not ds.is_dir():
        raise FixtureError(f"{ds}: missing")
    init = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in init]
    result = []
    for prefix, values in (("input", graph_inputs), ("output", list(model.graph.output))):
        found = sorted(p.name for p in ds.glob(f"{prefix}_*.pb"))
        want = [f"{prefix}_{k}.pb" for k in range(len(values))]
        if sorted(found) != sorted(want):
            raise FixtureError(f"{ds}: holds {found or 'no ' + prefix + ' files'}, the graph has {len(values)} "
                               f"{prefix}s ({', '.join(want) or 'none'} expected)")
        result.append({vi.name: _parse_tensor(root, ds / f"{prefix}_{k}.pb", vi) for k, vi in enumerate(values)})
    return model, result[0], result[1], meta


# ---------------------------------------------------------------------------------------------
# Verification (ONNX Runtime against the expected outputs, with the case's comparison rule)
# ---------------------------------------------------------------------------------------------

@dataclass
class FixtureCheck:
    case_id: str
    status: str                       # "pass" | "fail" | "error"
    providers: list[str]
    outputs: dict[str, dict] = field(default_factory=dict)
    message: str = ""
    expected_output_is_policy: bool = False

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def _stats_dict(c) -> dict:
    """One output's comparison (record.OutputStats) as the plain dict a FixtureCheck holds."""
    res: dict = {"ok": c.match, "kind": c.kind, "labels": list(c.labels), "alternative": c.alternative,
                 "mismatches": None if c.labels[:1] in (["shape"], ["dtype"]) else c.mismatches}
    if c.kind == "ulp":
        res["max_ulp"], res["ulp_allowed"] = c.max_ulp, c.tolerance_ulp
    if not c.match:
        res["detail"] = verdict.why({c.output: c})
        res["first"] = [{"at": r["index"], "got": r["got"], "expected": r["ref"]} for r in c.first[:5]]
    return res


def compare_output(kind: str, got: np.ndarray, want: np.ndarray, *, ulp: int = 0, name: str = "output") -> dict:
    """Compare one output of a fixture that has no case.json (e.g. ONNX's own node tests) with the
    rule ``kind`` ('exact', 'ulp', 'indices'): the bench's comparator, as a plain dict. Fixtures
    with a case go through :func:`verdict.judge`, with the operator's tie rule."""
    return _stats_dict(C.compare_output(name, OutputSpec(kind, ulp=ulp), np.asarray(got), np.asarray(want)))


def _case_of(meta: dict) -> Case | None:
    try:
        return case_from_dict(meta["case"], "case.json") if meta.get("case") else None
    except CaseFileError:
        return None


def verify_fixture(case_dir: str | os.PathLike, providers: Sequence[str] = ("CPUExecutionProvider",), *,
                   graph_optimization: str = "disabled") -> FixtureCheck:
    """Run a fixture in ONNX Runtime with ``providers`` and judge its outputs against the expected
    ones: through the bench's verdict path (``verdict.judge``, with the operator's comparison
    specs and tie rule) when case.json holds the case, else with the rule recorded in case.json
    (exact if none). Graph optimisations are disabled unless ``graph_optimization`` is 'basic',
    'extended' or 'all'. This does not prove on which provider the node ran: ONNX Runtime may
    place it on a later provider of the list."""
    import onnxruntime as ort
    model, inputs, expected, meta = load_fixture(case_dir)
    cid = meta.get("id", Path(case_dir).name)
    check = FixtureCheck(case_id=cid, status="pass", providers=list(providers),
                         expected_output_is_policy=bool(meta.get("expected_output_is_policy", False)))
    so = ort.SessionOptions()
    so.graph_optimization_level = graph_optimization_level(ort, graph_optimization)
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=list(providers))
        names = [o.name for o in sess.get_outputs()]
        got = dict(zip(names, sess.run(None, inputs)))
    except Exception as e:  # ONNX Runtime raises its own exception types; keep the raw text
        check.status = "error"
        check.message = f"{type(e).__name__}: {e}"
        return check
    case = _case_of(meta)
    if case is not None:
        # single-case models are built with an empty prefix: graph names are the case's local names
        j = verdict.judge(case, inputs, Outcome(True, "done", None, got), None, None, ep_name=providers[0],
                          ep_is_cpu=True, ref=expected)
        stats = j.outputs
    else:
        rules = {o["name"]: o.get("compare", {}) for o in meta.get("outputs", [])}
        stats = {name: C.compare_output(name, OutputSpec(rules.get(name, {}).get("kind", "exact"),
                                                         ulp=int(rules.get(name, {}).get("ulp", 0))),
                                        got.get(name), want) for name, want in expected.items()}
    check.outputs = {name: _stats_dict(c) for name, c in stats.items()}
    if not all(c.match for c in stats.values()):
        check.status = "fail"
        check.message = verdict.why(stats)
    return check


# ---------------------------------------------------------------------------------------------
# ONNX backend test machinery
# ---------------------------------------------------------------------------------------------

def backend_test_name(case_id: str) -> str:
    """The ONNX backend-test name of a fixture directory (names must start with test_)."""
    return "test_" + re.sub(r"[^0-9A-Za-z_]", "_", case_id)


def backend_test_cases(fixture_dir: str | os.PathLike) -> list:
    """The fixture folder as ONNX backend TestCases, loaded by ``onnx.backend.test.loader``
    (which also reads each case's data.json for rtol/atol), named ``test_<case id>``."""
    from onnx.backend.test.loader import load_model_tests
    root = Path(fixture_dir).resolve()
    out = []
    for tc in load_model_tests(data_dir=str(root.parent), kind=root.name):
        out.append(replace(tc, name=backend_test_name(tc.name), model_name=tc.name))
    return sorted(out, key=lambda t: t.name)


def backend_runner(fixture_dir: str | os.PathLike, backend, parent_module: str | None = None,
                   prepare_kwargs: dict | None = None):
    """An ``onnx.backend.test.runner.Runner`` (``BackendTest``) holding only the fixtures of
    ``fixture_dir`` (category 'DmlFixtureModel'; tests ``test_<case id>_<device>``):
    ``runner.test_suite`` runs them with any ONNX backend, e.g. ``onnxruntime.backend``.
    ``prepare_kwargs`` go to ``backend.prepare`` for every case (for onnxruntime.backend e.g.
    ``graph_optimization_level``). rtol/atol come from each case's data.json via ONNX's loader.

    onnx 1.23's Runner always loads ONNX's own suites and takes no data directory: they are
    not loaded while it is built, and the fixtures are added through its model-test hook."""
    import onnx.backend.test.runner as runner_mod
    cases = backend_test_cases(fixture_dir)
    test_kwargs = {tc.name: dict(prepare_kwargs) for tc in cases} if prepare_kwargs else None
    original = runner_mod.load_model_tests
    runner_mod.load_model_tests = lambda *a, **k: []
    try:
        runner = runner_mod.Runner(backend, parent_module, test_kwargs)
    finally:
        runner_mod.load_model_tests = original
    for tc in cases:
        runner._add_model_test(tc, "DmlFixture")
    return runner


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def select_cases(profile: str, ops: Sequence[str] | None = None, dtypes: Sequence[str] | None = None) -> list[Case]:
    """The sweep cases of ``profile`` for operators ``ops`` (registry names, DML names or short
    prefixes; all when None) and data types ``dtypes`` (FLOAT32 / f32 ...; all when None)."""
    keys = list(dict.fromkeys(registry.get(o).key for o in ops)) if ops else None    # each operator once
    return sweep_cases(profile, keys, dtypes)


def fixtures_command(out: Path, profile: str, ops: list[str] | None, dtypes: list[str] | None,
                     include_open: bool) -> int:
    """``onnx-dml-bench fixtures``: export the selected sweep cases; print one summary line.
    Returns 0 on success, 1 if nothing was selected or a case failed to export, 2 on bad
    arguments or an unusable output folder."""
    try:
        cases = select_cases(profile, ops, dtypes)
    except (KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"fixtures: {msg}", file=sys.stderr)
        return 2
    if not cases:
        print(f"fixtures: no cases match (profile {profile}, ops {ops or 'all'}, dtypes {dtypes or 'all'})",
              file=sys.stderr)
        return 1
    try:
        summary = export(cases, Path(out), include_open=include_open)
    except (FixtureError, OSError) as e:
        print(f"fixtures: {e}", file=sys.stderr)
        return 2
    print(summary.line())
    if summary.errors:
        for e in summary.errors:
            print(f"fixtures: error in {e['id']}: {e['reason']}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# Curated set (committed in models/): each operator declares its own (Operator.curated)
# ---------------------------------------------------------------------------------------------

def _curated() -> list[Curated]:
    return [c for op in registry.OPERATORS.values() for c in op.curated()]


def curated_cases() -> list[Case]:
    """The small set committed in models/: the DirectML documentation's worked examples and a
    few seeded cases per operator and data type (batch and channel > 1 for MaxRoiPool and
    MaxPool with indices). Inputs come only from explicit values or seeded generators."""
    return [c.case for c in _curated()]


def regenerate_curated(models_dir: str | os.PathLike, *, log: Callable[[str], None] | None = None) -> ExportSummary:
    """Export :func:`curated_cases` into ``models_dir`` (open points left out). Checks first that
    the reference reproduces the documentation's literal outputs."""
    items = _curated()
    for c in items:
        if c.literal is None:
            continue
        ref = c.case.operator.reference(c.case, c.case.inputs())["Y"]
        if tuple(int(v) for v in ref.reshape(-1)) != tuple(c.literal):
            raise FixtureError(f"{c.case.id}: the reference does not reproduce the documentation's output ({c.note})")
    return export([c.case for c in items], models_dir, log=log, include_open=False,
                  notes={c.case.id: c.note for c in items})


__all__ = ["ExportSummary", "FixtureCheck", "FixtureError", "backend_runner", "backend_test_cases",
           "compare_output", "curated_cases", "export", "fixtures_command", "load_fixture",
           "regenerate_curated", "runner_tolerance", "select_cases", "backend_test_name", "verify_fixture"]
