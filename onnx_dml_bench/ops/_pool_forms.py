"""The ONNX forms of a pooling descriptor other than one pooling node: the graphs exporters write
for the same DirectML operator (ONNX-side variant ``form``; without it, one pooling node, the
``pool`` form). The forms an operator has, its global op, the Pad node's value and what the Pad
form decides of its descriptor are what the operator declares (``PoolingOperator``,
``ops/_pool_family.py``): this module names no operator.

- ``global``: GlobalMaxPool / GlobalAveragePool (TorchScript's export of adaptive pooling to 1, the
  DML EP's own lowering of both). The descriptor is the global window: WindowSize = the input's
  spatial sizes, no padding, dilations 1 (DirectML's output size is then 1 on every spatial axis,
  whatever the strides). No Indices output (GlobalMaxPool has none).
- ``reduce_mean`` (average only): ReduceMean over every spatial axis, what torch's default (dynamo)
  exporter writes for ``AdaptiveAvgPool2d(1)`` and what ``x.mean((2, 3))`` exports as. Same
  descriptor as ``global``. Its options: ``keepdims`` (1, the default: output N x C x 1 x 1; 0:
  N x C) and ``axes`` (``positive``: [2, 3(, 4)]; ``negative``: [-1, -2(, -3)], dynamo's spelling).
  Before opset 18 the axes are an attribute, from 18 an int64 input (an initializer).
- ``pad``: Pad, then the pooling node without pads: timm's ``MaxPool2dSame`` / ``AvgPool2dSame``
  as the dynamo exporter writes them. The Pad node adds the descriptor's StartPadding / EndPadding
  on the spatial axes, with the type's lowest value for max (-inf for floats: padding never wins)
  and 0 for average. Every window then lies inside the padded tensor, so an average divides by the
  whole window: the descriptor has IncludePadding TRUE (or no padding). The pooling node's own
  ``count_include_pad`` changes nothing there; option ``count_include_pad`` sets it as the exporter
  wrote it (default: the descriptor's IncludePadding). No Indices (they would index the padded
  tensor). Pad takes its pads as an attribute before opset 11, as inputs from 11.

MaxPool has the forms pool, global and pad; AveragePool all four.

Every form is the direct image of its descriptor: the graph's answer by the ONNX text is the
DirectML reference of the descriptor (reshaped to N x C for ``keepdims`` 0), which is what
:func:`expected` gives. ``check`` refuses a descriptor or option set a form cannot carry
(DescriptorError naming the option), ``expressible`` the opsets and data types ONNX cannot.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from onnx import helper, numpy_helper

from ..cases import make_variant
from ..dtypes import DML_TO_NUMPY
from .base import DescriptorError, schema_allows, tensor_info

FORMS = ("pool", "global", "reduce_mean", "pad")
#: ONNX-side options that only a form other than ``pool`` takes, and the forms that take them
FORM_OPTIONS = {"keepdims": ("reduce_mean",), "axes": ("reduce_mean",), "count_include_pad": ("pad",)}
#: the options of the ``pool`` form (the pooling node's own attributes)
POOL_OPTIONS = ("ceil_mode", "auto_pad", "storage_order")
AXES = ("positive", "negative")


def form(case) -> str:
    return case.v.get("form", "pool")


def is_global(desc) -> bool:
    """The descriptor's window is the whole spatial input: window = spatial sizes, no padding,
    dilations 1."""
    return (tuple(desc.WindowSize) == tuple(desc.InputSizes[2:]) and not any(desc.StartPadding)
            and not any(desc.EndPadding) and all(d == 1 for d in desc.Dilations))


def global_node(op) -> str:
    """The global op of pooling operator ``op`` (form ``global``)."""
    if op.global_op is None:
        raise ValueError(f"{op.key} has no global form")
    return op.global_op


def check(case) -> None:
    """Refuse what the case's form cannot carry (DescriptorError naming the option)."""
    f, v, d, op = form(case), case.v, case.desc, case.operator
    for key, forms in FORM_OPTIONS.items():
        if key in v and f not in forms:
            raise DescriptorError(f"onnx.{key}", f"applies to form {' or '.join(forms)} only (form is {f})")
    if f == "pool":
        return
    if f not in op.forms:
        raise DescriptorError("onnx.form", f"{f} is not a form of {op.key} (its forms: {', '.join(op.forms)})")
    set_pool = [k for k in POOL_OPTIONS if v.get(k, 0) not in (0, "NOTSET")]
    if set_pool:
        raise DescriptorError(f"onnx.{set_pool[0]}", f"is an option of the pooling node itself (form pool), not of form {f}")
    if op.indices(d):
        raise DescriptorError("OutputIndicesTensor.DataType", f"form {f} has no Indices output: the descriptor must have no "
                                                              "OutputIndicesTensor")
    if f in ("global", "reduce_mean") and not is_global(d):
        raise DescriptorError("WindowSize", f"form {f} is the global window: WindowSize must be the input's spatial sizes "
                                            f"{list(d.InputSizes[2:])} with no padding and dilations 1, got WindowSize "
                                            f"{list(d.WindowSize)}, pads {list(d.StartPadding) + list(d.EndPadding)}, "
                                            f"dilations {list(d.Dilations)}")
    if f == "pad" and (any(d.StartPadding) or any(d.EndPadding)):
        for name, value in op.pad_form_fields.items():
            if getattr(d, name) != value:
                raise DescriptorError(name, f"form pad: {op.pad_form_why}: {name} must be {str(value).upper()}")


def normalize(case):
    """The descriptor fields a form decides (global window, no Indices), and the options that do
    not apply to it dropped: for cases a tool makes (fuzzer samples, shrinker candidates)."""
    f = form(case)
    if f == "pool":
        return case
    d, op = case.desc, case.operator
    changes = {}
    if f in ("global", "reduce_mean"):
        nd = len(d.WindowSize)
        changes.update(WindowSize=tuple(d.InputSizes[2:]), StartPadding=(0,) * nd, EndPadding=(0,) * nd,
                       Dilations=(1,) * nd)
    if op.indices_field is not None:
        changes[op.indices_field] = None
    if f == "pad" and (any(d.StartPadding) or any(d.EndPadding)):
        changes.update(op.pad_form_fields)
    keep = {k: x for k, x in case.variant
            if k == "form" or (k in FORM_OPTIONS and f in FORM_OPTIONS[k])}
    return dataclasses.replace(case, desc=d.replace(**changes), variant=make_variant(**keep))


def expressible(case) -> str | None:
    """None where the opset and data type let ONNX build the form, else why not."""
    f, o, dt, op_type = form(case), case.opset, case.desc.DataType, case.operator.onnx_op
    if f == "global":
        return schema_allows(global_node(case.operator), o, dt)
    if f == "reduce_mean":
        return schema_allows("ReduceMean", o, dt)
    if f == "pad":
        if o < 2:
            return f"Pad before opset 2 takes 'paddings' and no pad value (opset {o})"
        # Pad-2 (before opset 11) takes float types only, its pad value a float attribute
        return schema_allows("Pad", o, dt) or schema_allows(op_type, o, dt)
    return None


def output_shape(case, pool_shape) -> tuple[int, ...]:
    if form(case) == "reduce_mean" and not case.v.get("keepdims", 1):
        return tuple(pool_shape[:2])
    return tuple(pool_shape)


def lowest(dml_type: str):
    dt = np.dtype(DML_TO_NUMPY[dml_type])
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def build(case, prefix: str, pool_attrs: dict, out_shape):
    """(nodes, initializers, input infos, output infos) of the case's form; names carry ``prefix``.
    ``pool_attrs``: the attributes of the case's pooling node (``_onnx_pool.case_node``)."""
    d, op = case.desc, case.operator
    f = form(case)
    x, y = prefix + "X", prefix + "Y"
    nd = len(d.WindowSize)
    ins = [tensor_info(x, d.DataType, d.InputSizes)]
    outs = [tensor_info(y, d.DataType, out_shape)]
    inits = []
    if f == "global":
        g = global_node(op)
        nodes = [helper.make_node(g, [x], [y], name=prefix + g, **op.global_attrs(case))]
    elif f == "reduce_mean":
        axes = list(range(2, 2 + nd)) if case.v.get("axes", "positive") == "positive" else [-(i + 1) for i in range(nd)]
        keep = int(case.v.get("keepdims", 1))
        if case.opset < 18:
            nodes = [helper.make_node("ReduceMean", [x], [y], name=prefix + "ReduceMean", axes=axes, keepdims=keep)]
        else:
            inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), prefix + "axes"))
            nodes = [helper.make_node("ReduceMean", [x, prefix + "axes"], [y], name=prefix + "ReduceMean",
                                      keepdims=keep)]
    elif f == "pad":
        pads = [0, 0, *d.StartPadding, 0, 0, *d.EndPadding]
        value = op.pad_value(d.DataType)
        xp = prefix + "Xpadded"
        if case.opset < 11:
            pad = helper.make_node("Pad", [x], [xp], name=prefix + "Pad", mode="constant", pads=pads, value=float(value))
        else:
            inits.append(numpy_helper.from_array(np.array(pads, dtype=np.int64), prefix + "pads"))
            inits.append(numpy_helper.from_array(np.array(value, dtype=DML_TO_NUMPY[d.DataType]), prefix + "pad_value"))
            pad = helper.make_node("Pad", [x, prefix + "pads", prefix + "pad_value"], [xp], name=prefix + "Pad",
                                   mode="constant")
        attrs = op.pad_node_attrs(case, {k: val for k, val in pool_attrs.items()
                                         if k not in ("pads", "auto_pad", "ceil_mode")})
        nodes = [pad, helper.make_node(op.onnx_op, [xp], [y], name=prefix + op.onnx_op, **attrs)]
    else:
        raise ValueError(f"form {f!r} has no graph of its own")
    return nodes, inits, ins, outs


def expected(case, reference: dict) -> dict:
    """The form's answer: the descriptor's reference, in the shape of the graph's output."""
    if form(case) == "reduce_mean" and not case.v.get("keepdims", 1):
        return {k: np.ascontiguousarray(v.reshape(v.shape[:2])) for k, v in reference.items()}
    return reference


def label_parts(variant: dict) -> list[str]:
    """The form and its options as parts of a case id."""
    f = variant.get("form", "pool")
    if f == "pool":
        return []
    parts = [f.replace("_", "")]
    if "keepdims" in variant:
        parts.append(f"kd{variant['keepdims']}")
    if variant.get("axes") == "negative":
        parts.append("negaxes")
    if "count_include_pad" in variant:
        parts.append(f"nodecip{variant['count_include_pad']}")
    return parts


def spatial_axes(axes, rank: int) -> str | None:
    """``positive`` / ``negative`` where ``axes`` are every spatial axis as :func:`build` writes
    them ([2, 3(, 4)] or [-1, -2(, -3)]); None for any other set or order."""
    nd = rank - 2
    axes = [int(a) for a in axes]
    if axes == list(range(2, 2 + nd)):
        return "positive"
    if axes == [-(i + 1) for i in range(nd)]:
        return "negative"
    return None
