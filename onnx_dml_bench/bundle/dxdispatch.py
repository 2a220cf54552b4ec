"""A case's DirectML operator outside the bench: the ``DML_*_OPERATOR_DESC`` as C++ and as a
DxDispatch model.

DxDispatch (microsoft/DirectML, folder ``DxDispatch``) runs a JSON model of three members:
``resources`` (named buffers with ``initialValuesDataType`` and ``initialValues``: an array,
where floats may be the strings "nan", "inf", "-inf", or ``{valueCount, value}``),
``dispatchables`` (for a DirectML operator: ``type`` "DML_OPERATOR_<NAME>" and ``desc``, the
operator desc's fields by their directml.h names, tensor descs as ``{DataType, Sizes}``; an
optional tensor left out is a null pointer) and ``commands`` (``dispatch`` with ``bindings`` from
the desc's tensor fields to resource names, ``print`` of a resource). The format is described in
``DxDispatch/doc/Guide.md`` and ``DxDispatch/models/_schema.json`` of that repository;
:func:`check_model` checks an emitted model against those rules.

Both are written from the operator's own declaration of its struct: ``case.operator.layout(desc)``
(the fields in directml.h order, which of them are tensors bound to which input or output of the
case) and ``case.operator.dml_type``; nothing here knows an operator.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np

from ..dtypes import DML_TO_NUMPY
from ..ops.base import Field

DATA_TYPES = ("FLOAT16", "FLOAT32", "FLOAT64", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64")


def layout(case) -> list[Field]:
    """The case's DirectML struct: its operator's layout of the case's descriptor."""
    return case.operator.layout(case.desc)


# ----------------------------------------------------------------------------------------------
# C++
# ----------------------------------------------------------------------------------------------

def _c_float(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    r = repr(float(v))
    return r + "f" if ("." in r or "e" in r) else r + ".0f"


def cpp_struct(case) -> str:
    """The operator desc with its DML_BUFFER_TENSOR_DESC / DML_TENSOR_DESC initialisers, as C++
    that compiles against directml.h (DirectML's samples' style: aggregate initialisation)."""
    fields = layout(case)
    lines = ["// " + f"{case.operator.dml_name} of case {case.id}",
             "// DML_FEATURE_LEVEL " + str(getattr(case.desc, "FeatureLevel", "")),
             "#include <cmath>", "#include <DirectML.h>", ""]
    members = []
    for f in fields:
        if f.kind == "tensor":
            if f.tensor is None:
                members.append((f.name, "nullptr"))
                continue
            var = f.name[0].lower() + f.name[1:]
            sizes = ", ".join(map(str, f.sizes))
            count = int(np.prod(f.sizes))
            item = np.dtype(DML_TO_NUMPY[f.dtype]).itemsize
            total = (count * item + 3) // 4 * 4
            lines += [f"static const UINT {var}Sizes[{len(f.sizes)}] = {{ {sizes} }};",
                      f"static const DML_BUFFER_TENSOR_DESC {var}Buffer = {{",
                      f"    DML_TENSOR_DATA_TYPE_{f.dtype},  // DataType",
                      "    DML_TENSOR_FLAG_NONE,  // Flags",
                      f"    {len(f.sizes)},  // DimensionCount",
                      f"    {var}Sizes,  // Sizes",
                      "    nullptr,  // Strides (packed)",
                      f"    {total},  // TotalTensorSizeInBytes ({count} x {item} bytes, rounded up to 4)",
                      "    0,  // GuaranteedBaseOffsetAlignment",
                      "};",
                      f"static const DML_TENSOR_DESC {var} = {{ DML_TENSOR_TYPE_BUFFER, &{var}Buffer }};", ""]
            members.append((f.name, f"&{var}"))
        elif f.kind in ("uints", "ints"):
            var = f.name[0].lower() + f.name[1:]
            ctype = "UINT" if f.kind == "uints" else "INT"
            lines.append(f"static const {ctype} {var}[{len(f.value)}] = {{ {', '.join(map(str, f.value))} }};")
            members.append((f.name, var))
        elif f.kind in ("uint", "int"):
            members.append((f.name, str(int(f.value))))
        elif f.kind == "bool":
            members.append((f.name, "TRUE" if f.value else "FALSE"))
        elif f.kind == "float":
            members.append((f.name, _c_float(f.value)))
        elif f.kind == "size2d":
            members.append((f.name, f"DML_SIZE_2D{{ {f.value[0]}, {f.value[1]} }}"))
        elif f.kind == "enum":
            members.append((f.name, str(f.value)))
    if lines[-1] != "":
        lines.append("")
    name = case.operator.dml_name
    lines.append(f"static const {name} opDesc = {{")
    for i, (k, v) in enumerate(members):
        lines.append(f"    {v},  // {k}")
    lines += ["};", "",
              f"static const DML_OPERATOR_DESC operatorDesc = {{ {case.operator.dml_type}, &opDesc }};",
              "// IDMLDevice::CreateOperator(&operatorDesc, IID_PPV_ARGS(&op));", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# DxDispatch
# ----------------------------------------------------------------------------------------------

def _values(arr: np.ndarray) -> list:
    out = []
    for v in arr.reshape(-1):
        if arr.dtype.kind == "f":
            f = float(v)
            out.append("nan" if math.isnan(f) else ("inf" if f == math.inf else ("-inf" if f == -math.inf else f)))
        else:
            out.append(int(v))
    return out


def dxdispatch_model(case, inputs: dict[str, np.ndarray]) -> dict:
    """A DxDispatch model that dispatches the case's DirectML operator on the case's inputs and
    prints every output."""
    fields = layout(case)
    resources, desc, bindings, prints = {}, {}, {}, []
    for f in fields:
        if f.kind == "tensor":
            if f.tensor is None:
                continue          # optional tensor left out: a null pointer
            desc[f.name] = {"DataType": f.dtype, "Sizes": list(f.sizes)}
            if f.role == "input":
                arr = np.asarray(inputs[f.tensor])
                if int(np.prod(f.sizes)) != arr.size:
                    raise ValueError(f"{f.name}: {arr.size} values for sizes {list(f.sizes)}")
                resources[f.tensor] = {"initialValuesDataType": f.dtype, "initialValues": _values(arr)}
            else:
                resources[f.tensor] = {"initialValuesDataType": f.dtype,
                                       "initialValues": {"valueCount": int(np.prod(f.sizes)), "value": 0}}
                prints.append({"type": "print", "resource": f.tensor})
            bindings[f.name] = f.tensor
        elif f.kind in ("uints", "ints"):
            desc[f.name] = list(f.value)
        elif f.kind == "size2d":
            desc[f.name] = {"Width": f.value[0], "Height": f.value[1]}
        else:
            desc[f.name] = f.value
    name = case.op
    return {
        "resources": resources,
        "dispatchables": {name: {"type": case.operator.dml_type, "desc": desc}},
        "commands": [{"type": "dispatch", "dispatchable": name, "bindings": bindings}] + prints,
    }


def dumps(model: dict) -> str:
    """JSON text of a model (NaN and infinities are already strings); arrays of numbers on one line."""
    text = json.dumps(model, indent=2, allow_nan=False)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    return text + "\n"


# ----------------------------------------------------------------------------------------------
# Format checks (DxDispatch/doc/Guide.md, DxDispatch/models/_schema.json)
# ----------------------------------------------------------------------------------------------

_DTYPES_FULL = set(DATA_TYPES) | {f"DML_TENSOR_DATA_TYPE_{t}" for t in DATA_TYPES}


def check_model(model: dict, operator_fields: dict[str, list[str]] | None = None) -> list[str]:
    """Problems of a DxDispatch model by the documented format (empty: none). ``operator_fields``:
    dispatchable type -> every field its desc must define (the directml.h struct), checked when
    given."""
    p: list[str] = []
    if not isinstance(model, dict):
        return ["the model is not a JSON object"]
    for k in ("resources", "dispatchables", "commands"):
        if k not in model:
            p.append(f"missing root member {k!r}")
    res, disp, cmds = model.get("resources", {}), model.get("dispatchables", {}), model.get("commands", [])
    if not isinstance(res, dict) or not isinstance(disp, dict) or not isinstance(cmds, list):
        return p + ["resources and dispatchables must be objects, commands an array"]
    for name, r in res.items():
        where = f"resources.{name}"
        if not isinstance(r, dict):
            p.append(f"{where}: not an object")
            continue
        if r.get("type", "buffer") != "buffer":
            p.append(f"{where}.type: only 'buffer' resources exist")
        for k in ("initialValues", "initialValuesDataType"):
            if k not in r:
                p.append(f"{where}: missing {k!r}")
        dt = r.get("initialValuesDataType")
        if dt is not None and dt not in _DTYPES_FULL:
            p.append(f"{where}.initialValuesDataType: {dt!r} is not a DML_TENSOR_DATA_TYPE")
        iv = r.get("initialValues")
        floating = str(dt).replace("DML_TENSOR_DATA_TYPE_", "").startswith("FLOAT")
        if isinstance(iv, list):
            if not iv:
                p.append(f"{where}.initialValues: empty array")
            for i, v in enumerate(iv):
                if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                    p.append(f"{where}.initialValues[{i}]: {v!r} is not a number")
                elif isinstance(v, str) and (v not in ("nan", "inf", "-inf") or not floating):
                    p.append(f"{where}.initialValues[{i}]: string {v!r} (only 'nan', 'inf', '-inf' for float types)")
        elif isinstance(iv, dict):
            n = iv.get("valueCount")
            if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
                p.append(f"{where}.initialValues.valueCount: must be an integer > 0")
            if not ("value" in iv or ("valueStart" in iv and "valueDelta" in iv)):
                p.append(f"{where}.initialValues: a constant needs 'value', a sequence 'valueStart' and 'valueDelta'")
        elif iv is not None:
            p.append(f"{where}.initialValues: must be an array or an object")
    tensor_fields: dict[str, set] = {}
    for name, dd in disp.items():
        where = f"dispatchables.{name}"
        if not isinstance(dd, dict) or "type" not in dd:
            p.append(f"{where}: needs 'type'")
            continue
        t = dd["type"]
        if t in ("hlsl", "onnx", "dmlSerializedGraph"):
            continue
        if not str(t).startswith("DML_OPERATOR_"):
            p.append(f"{where}.type: {t!r} is not a DML_OPERATOR_* value")
        desc = dd.get("desc", dd.get("Desc"))
        if not isinstance(desc, dict):
            p.append(f"{where}: a DirectML dispatchable needs 'desc' (an object)")
            continue
        tensors = set()
        for k, v in desc.items():
            if isinstance(v, dict) and "Sizes" in v:
                tensors.add(k)
                if v.get("DataType") not in _DTYPES_FULL:
                    p.append(f"{where}.desc.{k}.DataType: {v.get('DataType')!r} is not a DML_TENSOR_DATA_TYPE")
                s = v.get("Sizes")
                if not isinstance(s, list) or not s or not all(isinstance(x, int) and x > 0 for x in s):
                    p.append(f"{where}.desc.{k}.Sizes: must be a non-empty list of integers > 0")
        want = (operator_fields or {}).get(t)
        if want is not None:
            missing = [f for f in want if f not in desc]
            if missing:
                p.append(f"{where}.desc: missing field(s) {', '.join(missing)} of the operator desc")
            unknown = [f for f in desc if f not in want]
            if unknown:
                p.append(f"{where}.desc: field(s) {', '.join(unknown)} are not in the operator desc")
        tensor_fields[name] = tensors
    if not cmds:
        p.append("commands: empty")
    for i, c in enumerate(cmds):
        where = f"commands[{i}]"
        if not isinstance(c, dict) or c.get("type") not in ("dispatch", "print"):
            p.append(f"{where}.type: must be 'dispatch' or 'print'")
            continue
        if c["type"] == "print":
            if c.get("resource") not in res:
                p.append(f"{where}.resource: {c.get('resource')!r} is not a resource of the model")
            continue
        if c.get("dispatchable") not in disp:
            p.append(f"{where}.dispatchable: {c.get('dispatchable')!r} is not a dispatchable of the model")
            continue
        b = c.get("bindings")
        if not isinstance(b, dict):
            p.append(f"{where}.bindings: must be an object")
            continue
        for k, v in b.items():
            names = [x if isinstance(x, str) else (x or {}).get("name") for x in (v if isinstance(v, list) else [v])]
            for nm in names:
                if nm not in res:
                    p.append(f"{where}.bindings.{k}: {nm!r} is not a resource of the model")
        tf = tensor_fields.get(c["dispatchable"])
        if tf is not None:
            for k in b:
                if k not in tf:
                    p.append(f"{where}.bindings.{k}: not a tensor field of the dispatchable's desc")
            for k in tf - set(b):
                p.append(f"{where}.bindings: tensor {k} of the desc is not bound")
    return p


def binding_sizes_ok(model: dict) -> list[str]:
    """Each bound resource holds as many elements as the desc's tensor has."""
    p = []
    for c in model.get("commands", []):
        if c.get("type") != "dispatch":
            continue
        desc = model["dispatchables"][c["dispatchable"]].get("desc", {})
        for k, r in c.get("bindings", {}).items():
            t = desc.get(k, {})
            iv = model["resources"][r]["initialValues"]
            n = len(iv) if isinstance(iv, list) else iv.get("valueCount")
            want = int(np.prod(t.get("Sizes", [0])))
            if n != want:
                p.append(f"binding {k}: resource {r!r} holds {n} elements, the tensor {want}")
    return p
