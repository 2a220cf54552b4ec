"""Profile ``networks``: every distinct layer of the census (``_census``) at its real input shape,
as the exporters wrote it, on the operator whose ONNX form the exported nodes are.

Per operator, :func:`cases` asks ``Operator.from_export`` for the descriptor (float32, at the
census's batch) and ONNX-side options of each export whose nodes are one of its forms; the two
exporters' graphs of one layer are one case where they are the same graph (a form with the same
descriptor and options), two where they differ (GlobalAveragePool and ReduceMean). Each becomes
cases in float32 and float16, at the census's batch and at a serving batch (:data:`SERVING_BATCH`
times it, or the largest power of two that keeps every tensor within the limit), at the exporters'
opset, with the operator's ``network_family`` of input values. A case whose tensors exceed
``max_elements`` is not generated. Each case names where it comes from (``Case.source``): the
census layers, their kind, the exporters, the ONNX nodes and the models that use them.
"""
from __future__ import annotations

import dataclasses
import math

from . import _census

PROFILE = "networks"
#: the serving batch, as a multiple of the census's (batch 1 in every model but two)
SERVING_BATCH = 8
TYPES = ("FLOAT32", "FLOAT16")


def _fits(op, desc, max_elements: int) -> bool:
    try:
        op.check_size(desc, max_elements)
    except ValueError:             # ops.base.DescriptorError: a tensor over the limit
        return False
    return True


def batches(op, desc, max_elements: int) -> list[int]:
    """The batch multiples of a census descriptor: 1 and the serving batch (:data:`SERVING_BATCH`,
    or the largest power of two below it whose tensors fit ``max_elements``; none where 2 does
    not)."""
    out = [1]
    b = SERVING_BATCH
    while b >= 2:
        if _fits(op, op.batched(desc, b), max_elements):
            out.append(b)
            break
        b //= 2
    return out


def _merge(source: dict, e) -> dict:
    source.setdefault("layers", [])
    if e.layer not in source["layers"]:
        source["layers"].append(e.layer)
    for key, value in (("kinds", e.kind), ("exporters", e.exporter)):
        source.setdefault(key, [])
        if value not in source[key]:
            source[key].append(value)
    source.setdefault("onnx", {})[e.exporter] = e.ops
    source["models"] = sorted(set(source.get("models", [])) | set(e.models))
    return source


def cases(op, max_elements: int) -> list:
    """The ``networks`` cases of ``op`` (every census export it can express), within ``max_elements``."""
    found: dict = {}              # (descriptor, variant, opset) -> source
    for e in _census.exports():
        for desc, variant in op.from_export(e):
            key = (desc, tuple(sorted(variant.items())), e.opset)
            found[key] = _merge(found.get(key, {"profile": PROFILE}), e)
    out = []
    for (desc, variant, opset), source in found.items():
        variant = dict(variant)
        for factor in batches(op, desc, max_elements):
            for dt in TYPES:
                d = op.batched(desc, factor).replace(DataType=dt)
                if not _fits(op, d, max_elements):
                    continue
                src = {**source, "batch": d.InputSizes[0], "census_batch": desc.InputSizes[0]}
                case = op.make_case(d, variant, op.network_family(dt), opset)
                out.append(dataclasses.replace(case, source=src))
    return out


def elements(case) -> int:
    """The largest tensor of a case, in elements."""
    op = case.operator
    shapes = list(op.input_shapes(case.desc).values()) + [op.output_shape(case.desc)]
    return max(math.prod(s) for s in shapes)


#: why a census layer has no ``networks`` case (docs/profiles.md lists them)
LEFT_OUT = {
    "roi_align": "RoiAlign: an export that no RoiAlign operator of the bench reads",
    "pool1d": "1-D pooling (an N x C x L tensor): DirectML pooling is 4-D or 5-D",
    "mean-nhwc": "a mean over the spatial axes of an NHWC tensor: ReduceMean over axes 1 and 2 is not a pooling "
                 "descriptor's graph",
    "chain": "no exporter wrote a graph of a bench descriptor (adaptive pooling to a size that does not divide the "
             "input: Gather/ReduceMean chains)",
}
OVER_LIMIT = "every tensor over the run's limit (--max-elements): the layer's cases are not generated"


def coverage(operators, max_elements: int) -> dict[str, str | None]:
    """Census layer id -> None where the profile has cases of it on one of ``operators`` (the
    registry's) within ``max_elements``, else why not (:data:`LEFT_OUT`, :data:`OVER_LIMIT`)."""
    operators = list(operators)
    limit = max_elements
    by_layer: dict = {}
    for e in _census.exports():
        by_layer.setdefault(e.layer, []).append(e)
    out = {}
    for layer in _census.data()["layers"]:
        lid, exps = layer["id"], by_layer.get(layer["id"], [])
        found = [(op, d) for e in exps for op in operators for d, _ in op.from_export(e)]
        if found:
            out[lid] = None if any(_fits(op, d, limit) for op, d in found) else OVER_LIMIT
        elif any(e.kind == "roi_align" for e in exps):
            out[lid] = LEFT_OUT["roi_align"]
        elif any(len(s) == 3 for s in (tuple(layer["input"][0]),)):
            out[lid] = LEFT_OUT["pool1d"]
        elif any(e.ops == "ReduceMean" for e in exps):
            out[lid] = LEFT_OUT["mean-nhwc"]
        else:
            out[lid] = LEFT_OUT["chain"]
    return out
