"""Assertions on descriptor rules, shared by the operators' test files: every error must name the
DML field it is about, both in ``DescriptorError.field`` and in the text (which starts with the
field's name); and the pooling operators' base descriptors."""
from __future__ import annotations

import pytest

from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops.base import DescriptorError


POOL = dict(InputSizes=[1, 1, 4, 4], DataType="FLOAT32", DimensionCount=2, Strides=[1, 1], WindowSize=[2, 2],
            StartPadding=[0, 0], EndPadding=[0, 0], Dilations=[1, 1])
POOL3 = dict(POOL, InputSizes=[1, 1, 4, 4, 4], DimensionCount=3, Strides=[1, 1, 1], WindowSize=[2, 2, 2],
             StartPadding=[0, 0, 0], EndPadding=[0, 0, 0], Dilations=[1, 1, 1])


def desc(op, base, **changes):
    return op.Desc.from_dict({**base, **changes})


def rejects(op, base, field, *words, **changes) -> DescriptorError:
    """The descriptor base+changes is rejected, naming ``field``; ``words`` appear in the text."""
    d = desc(op, base, **changes)
    with pytest.raises(DescriptorError) as ei:
        op.validate(d)
    return named(ei.value, field, *words)


def named(e: DescriptorError, field: str, *words) -> DescriptorError:
    assert e.field == field, f"field {e.field!r} (rule: {e.rule}), expected {field!r}"
    text = str(e)
    assert text.startswith(field), text
    assert e.rule and e.rule in text
    for w in words:
        assert w.lower() in text.lower(), f"{w!r} not in {text!r}"
    return e


def variant_rejects(op, d, field, *words, **variant):
    case = Case(op, d, op.default_opset, make_variant(**variant))
    with pytest.raises(DescriptorError) as ei:
        op.check_variant(case)
    return named(ei.value, field, *words)
