"""A self-contained folder for a driver bug report: one failing case, everything a person needs to
see the failure without the bench.

    DIR/model.onnx, DIR/test_data_set_0/input_K.pb, output_K.pb   ONNX backend-test layout
                                          (fixtures.export; expected = the bench's reference)
    DIR/case.json, DIR/data.json          the case's metadata and comparison rule (fixtures.export)
    DIR/ep_outputs/output_K.pb            what the EP of the record gave, re-run at bundle time
    DIR/cpu_outputs/output_K.pb           what ONNX Runtime's CPU EP gave, same run
    DIR/repro.py                          needs only onnxruntime + numpy (or, for bundles that share
                                          one copy of it, a few lines that run it: ``shared_repro``)
    DIR/descriptor.cpp                    the DML_*_OPERATOR_DESC with its tensor descs
    DIR/dxdispatch.json                   a DxDispatch model dispatching the same operator
    DIR/cases.json                        the case file (`onnx-dml-bench run --cases`)
    DIR/record.json                       the result record the bundle was made from
    DIR/README.md                         what failed, where (environment), how to run each piece
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from onnx import numpy_helper

from .. import __version__
from ..casefile import dump
from ..cases import Case
from ..fixtures import export
from ..outdir import BUNDLE_README
from ..record import to_json
from . import dxdispatch as DX
from .repro import REPRO, STUB_MARK, stub


class BundleError(ValueError):
    """A problem with the command's arguments or the case (one line for a person)."""


def _write_outputs(folder: Path, model_outputs: list[str], outputs: dict | None) -> list[str]:
    written = []
    if not outputs:
        return written
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(model_outputs):
        if name in outputs and outputs[name] is not None:
            arr = np.ascontiguousarray(outputs[name])
            (folder / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
            written.append(name)
    return written


def _env_lines(env) -> list[str]:
    if env is None:
        return ["- (the results file holds no environment record)"]
    flat = env.flat()
    rows = [("EP", flat.get("ep")), ("EP key", flat.get("ep_key")), ("EP options", flat.get("ep_options")),
            ("ONNX Runtime", f"{flat.get('ort_package')} {flat.get('ort_version')}".strip()),
            ("EP package", flat.get("ep_package")), ("device", flat.get("device")), ("driver", flat.get("driver")),
            ("OS", flat.get("os")), ("CPU", flat.get("cpu")), ("Python", flat.get("python")),
            ("graph optimisation", flat.get("optimization")), ("bench", f"{flat.get('bench_version')} "
                                                                          f"({flat.get('git_revision')})")]
    dml = flat.get("dml") or {}
    if isinstance(dml, dict):
        for k in ("DirectML.dll", "DirectML.dll (string)", "wine", "mesa", "vkd3d"):
            if dml.get(k):
                rows.append((f"DirectML stack: {k}", dml[k]))
    versions = flat.get("versions") or {}
    if isinstance(versions, dict):
        for k, v in sorted(versions.items()):
            rows.append((f"version: {k}", v))
    return [f"- {k}: `{v}`" for k, v in rows if v not in (None, "", {}, "None")]


def build(case: Case, out: Path, *, rec=None, env=None, ep_outputs=None, cpu_outputs=None, how: str = "",
          now_verdict: str = "", shared_repro: Path | None = None) -> Path:
    """Write the bundle of ``case`` into ``out`` (created; must be empty or absent). The folder is
    made beside ``out`` and renamed into place when whole: a full disk leaves no half a bundle.
    A bundle stands alone: its ``repro.py`` is the whole script. ``shared_repro``: the bundle's
    ``repro.py`` runs the script at that path instead (written there unless it is already), for
    many bundles kept together, e.g. the committed samples (:func:`share_repro`)."""
    final = Path(out)
    if final.exists() and (not final.is_dir() or any(final.iterdir())):
        raise BundleError(f"{final}: exists and is not empty; choose a new folder")
    final.parent.mkdir(parents=True, exist_ok=True)
    out = final.parent / f".{final.name}.{os.getpid()}.tmp"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    try:
        _write(case, out, rec, env, ep_outputs, cpu_outputs, how, now_verdict)
        if shared_repro is not None:
            _share(out, Path(shared_repro), final)
        if final.exists():
            final.rmdir()
        os.replace(out, final)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return final


def _write(case: Case, out: Path, rec, env, ep_outputs, cpu_outputs, how: str, now_verdict: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        summary = export([case], Path(tmp) / "fx", include_open=True)
        if not summary.exported:
            reason = summary.left_out[0]["reason"] if summary.left_out else "unknown"
            raise BundleError(f"{case.id}: cannot be exported as a fixture: {reason}")
        src = Path(tmp) / "fx" / case.id
        for p in src.iterdir():
            shutil.move(str(p), out / p.name)
    meta = json.loads((out / "case.json").read_text(encoding="utf-8"))
    model_outputs = [o["name"] for o in meta["outputs"]]
    ep_written = _write_outputs(out / "ep_outputs", model_outputs, ep_outputs)
    cpu_written = _write_outputs(out / "cpu_outputs", model_outputs, cpu_outputs)
    dump([case], out / "cases.json")
    (out / "descriptor.cpp").write_text(DX.cpp_struct(case), encoding="utf-8")
    (out / "dxdispatch.json").write_text(DX.dumps(DX.dxdispatch_model(case, case.inputs())), encoding="utf-8")
    if rec is not None:
        (out / "record.json").write_text(json.dumps(json.loads(to_json(rec)), indent=1) + "\n", encoding="utf-8")
    ep_name = (rec.ep if rec is not None else None) or (env.ep if env is not None else "CPUExecutionProvider")
    bundle_meta = {"ep": ep_name, "case_id": case.id, "verdict": rec.verdict if rec is not None else None,
                   "attribution": rec.attribution if rec is not None else None,
                   "outputs_from": how or "not re-run: no EP or CPU outputs in this bundle",
                   "ep_outputs": ep_written, "cpu_outputs": cpu_written, "bench_version": __version__}
    (out / "bundle.json").write_text(json.dumps(bundle_meta, indent=1) + "\n", encoding="utf-8")
    (out / "repro.py").write_text(REPRO, encoding="utf-8")
    (out / BUNDLE_README).write_text(_readme(case, rec, env, meta, bundle_meta, now_verdict), encoding="utf-8")


#: what a bundle's README says of its repro.py: the whole script, or the shared one
REPRO_LINE = ("- `repro.py`: loads the model and the `.pb` inputs, runs them on the EP and on the CPU EP, compares "
              "with the rule of `case.json`, prints the first mismatches. Needs only `onnxruntime` and `numpy`")
SHARED_LINE = ("- `repro.py`: runs the shared script `{shared}` on this folder (`python {shared} --bundle .` does "
               "the same), which loads the model and the `.pb` inputs, runs them on the EP and on the CPU EP, compares "
               "with the rule of `case.json`, prints the first mismatches. Needs only `onnxruntime` and `numpy`")


def share_repro(bundle: Path, shared: Path) -> bool:
    """Make the standalone bundle in ``bundle`` run the shared script at ``shared`` (the bench's
    script of today, written there unless it is already): its ``repro.py`` a few lines, its README
    saying so. False where the bundle shares it already; BundleError where its ``repro.py`` is not
    the bench's script of some version (a script of the user's own would be lost)."""
    bundle = Path(bundle)
    text = (bundle / "repro.py").read_text(encoding="utf-8")
    if STUB_MARK in text[:200]:
        return False
    if not text.startswith(REPRO.split("\n", 2)[0] + "\n" + REPRO.split("\n", 2)[1]):
        raise BundleError(f"{bundle / 'repro.py'}: not the bench's repro script: left as it is")
    _share(bundle, Path(shared), bundle)
    return True


def _share(folder: Path, shared: Path, final: Path) -> None:
    """``folder``'s repro.py and README (a bundle to be renamed to ``final``) made to run ``shared``."""
    if not shared.is_file() or shared.read_text(encoding="utf-8") != REPRO:
        shared.parent.mkdir(parents=True, exist_ok=True)
        shared.write_text(REPRO, encoding="utf-8")
    rel = Path(os.path.relpath(Path(shared).resolve(), Path(final).resolve())).as_posix()
    (folder / "repro.py").write_text(stub(rel), encoding="utf-8")
    readme = folder / BUNDLE_README
    readme.write_text(readme.read_text(encoding="utf-8").replace(REPRO_LINE, SHARED_LINE.format(shared=rel)),
                      encoding="utf-8")


def _readme(case, rec, env, meta, bm, now_verdict) -> str:
    op = case.operator
    lines = [f"# {op.dml_name}: {case.id}", ""]
    if rec is not None:
        lines += [f"Recorded verdict on `{rec.ep}`: **{rec.verdict}**" + (f" ({rec.attribution})" if rec.attribution else ""),
                  "", "> " + (rec.reason or "").replace("\n", " ")[:2000], ""]
        if rec.labels:
            lines += [f"Labels: {', '.join(rec.labels)}", ""]
    if now_verdict:
        lines += [f"Re-run when this bundle was made: {now_verdict}", ""]
    lines += ["## Environment of the record", ""] + _env_lines(env) + [""]
    lines += ["## Case", "",
              f"- DirectML operator: `{op.dml_name}` (desc in `descriptor.cpp`, DxDispatch model in `dxdispatch.json`)",
              f"- ONNX graph: opset {case.opset}, nodes {', '.join(meta['onnx']['op_types'])}, options {case.v or '{}'}",
              f"- data type {case.dtype}; inputs: " + ", ".join(f"{t['name']} {t['dtype']} {t['shape']}"
                                                            for t in meta["inputs"]["tensors"]),
              "- descriptor: `" + json.dumps(case.desc.to_dict()) + "`", ""]
    if meta.get("open_points"):
        lines += ["The data touches points the DirectML documentation leaves open; the expected outputs follow "
                  "the bench's policy there (`case.json`: `open_points`). Other answers may be allowed:", ""]
        lines += [f"- {k}: {v}" for k, v in meta["open_points"].items()] + [""]
    lines += ["## Files", "",
              "- `model.onnx`, `test_data_set_0/input_K.pb`, `test_data_set_0/output_K.pb`: the ONNX backend-test "
              "layout; expected outputs come from the bench's NumPy reference of the DirectML semantics",
              "- `case.json`: descriptor, comparison rule per output (`outputs[].compare`), open points; `data.json`: rtol/atol",
              f"- `ep_outputs/`, `cpu_outputs/`: {bm['outputs_from']}",
              REPRO_LINE,
              "- `descriptor.cpp`: the operator desc as C++ (directml.h)",
              "- `dxdispatch.json`: the same operator and tensors for DxDispatch (microsoft/DirectML, `DxDispatch`)",
              "- `cases.json`: the case for `onnx-dml-bench run --cases cases.json`",
              "- `record.json`: the bench's result record", "",
              "## Run", "",
              "    pip install onnxruntime numpy         # or onnxruntime-directml on Windows",
              "    python repro.py                       # EP of the record if installed, and the CPU EP",
              "    python repro.py --ep CPUExecutionProvider",
              "    dxdispatch.exe dxdispatch.json        # prints the outputs DirectML computes",
              "    onnx-dml-bench run --ep <ep> --cases cases.json", "",
              f"Written by onnx-dml-bench {__version__} on "
              f"{_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d')}.", ""]
    return "\n".join(lines)
