"""Descriptor-only cases of the direct DirectML lane: the (feature level, data type) pairs that the
seed pages list for an operator (its module's ``TYPES_BY_LEVEL``, and ``INDEX_TYPES_BY_LEVEL`` for
MaxPool's indices) but that the operator's ONNX-driven sweep leaves out, because ONNX cannot carry
them (MaxPool on INT32, UINT64 indices, ...) or because the ONNX graph is the same whatever the
bench's FeatureLevel field says (MaxPool at 2.1 / 3.0, space/depth at 2.1).

Each pair gets the geometries of the operator's own sweep (cases without ONNX-side options, in
sweep order), re-typed; per profile a budget of geometries per pair. Whether DirectML runs them is
DirectML's own answer (NOT_SUPPORTED otherwise, see ``DirectRunner.unsupported``).
"""
from __future__ import annotations

import sys

from ...dtypes import FEATURE_LEVELS
from ...ops.base import DescriptorError
from .lane import NEUTRAL, onnx_side_variant

#: geometries per missing (feature level, data type) pair
BUDGET = {"smoke": 2, "default": 12, "full": 10**6}


def level_types(op) -> list[tuple[str, str]]:
    """(feature level, data type) pairs the operator's module declares, lowest level first."""
    table = getattr(sys.modules[type(op).__module__], "TYPES_BY_LEVEL", {})
    return [(fl, t) for fl in sorted(table, key=FEATURE_LEVELS.index) for t in table[fl]]


def _retyped(op, desc, level: str, dtype: str):
    """``desc`` at ``level`` in ``dtype``; MaxPool indices fall back to what the level allows."""
    d = desc.replace(DataType=dtype, FeatureLevel=level)
    tries = [d]
    if getattr(d, "OutputIndicesDataType", None):
        tries += [d.replace(OutputIndicesDataType="UINT32"), d.replace(OutputIndicesDataType=None)]
    for cand in tries:
        try:
            op.validate(cand)
            return cand
        except DescriptorError:
            continue
    return None


def extra_for(op, base_cases: list, profile: str) -> list:
    """The operator's descriptor-only cases for the pairs its sweep does not cover."""
    covered = {(getattr(c.desc, "FeatureLevel", None), c.dtype) for c in base_cases}
    plain = [c for c in base_cases if not onnx_side_variant(c) and c.values is None]
    out, seen = [], set()
    for level, dtype in level_types(op):
        if (level, dtype) in covered:
            continue
        families = op.families(dtype)
        n = 0
        for i, c in enumerate(plain):
            d = _retyped(op, c.desc, level, dtype)
            if d is None or repr(d) in seen:
                continue
            seen.add(repr(d))
            fam = c.family if c.family in families else families[i % len(families)]
            out.append(op.make_case(d, {k: v for k, v in c.variant if (k, v) in NEUTRAL}, fam, opset=c.opset))
            n += 1
            if n >= BUDGET.get(profile, BUDGET["default"]):
                break
    return out


def descriptor_only_cases(cases: list, profile: str) -> list:
    """Cases to add to a run of ``cases`` (a profile's sweep) on the direct lane."""
    by_op: dict = {}
    for c in cases:
        by_op.setdefault(c.operator, []).append(c)
    ids = {c.id for c in cases}
    extra = [x for op, group in by_op.items() for x in extra_for(op, group, profile)]
    return [x for x in extra if x.id not in ids]
