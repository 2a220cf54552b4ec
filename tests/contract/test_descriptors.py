"""The descriptor contract every registered operator keeps, from the registry (an operator added to
``ops/`` gets these tests without a line here): its descriptors read back from what they write
(``to_dict`` / ``from_dict``, JSON between), a field that is not the struct's, a missing field and
a field of the wrong type are refused naming that field, every spelling of a data type reads as
one, its ONNX-side options are checked (an unknown option, a value outside an option's closed
list), a case file whose tensor is larger than the run's limit is refused when it is loaded naming
the tensor, and every data type of its page's table at the highest feature level is either swept
or declared not expressible. What only one operator knows (its own rules, each naming its DML
field) stays in its file in ``tests/ops/``."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import CaseFileError, case_from_dict
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.dtypes import DML_TYPES, FEATURE_LEVELS
from onnx_dml_bench.ops.base import DescriptorError

from conftest import sweep

OPS = list(registry.OPERATORS)


def sample(key: str) -> Case:
    """A case of the operator's smoke sweep with no ONNX-side options where it has one."""
    cases = sweep("smoke", key)
    return next((c for c in cases if not c.variant), cases[0])


def refused(call, field: str, *words) -> DescriptorError:
    """``call()`` raises a DescriptorError naming ``field`` (its ``field`` and the start of its
    text), with ``words`` in the text."""
    with pytest.raises(DescriptorError) as ei:
        call()
    e = ei.value
    assert e.field == field and str(e).startswith(field), f"{e.field!r}: {e}"
    for w in words:
        assert w.lower() in str(e).lower(), f"{w!r} not in {e}"
    return e


@pytest.mark.parametrize("op_key", OPS)
def test_descriptors_read_back_from_what_they_write(op_key):
    op = registry.OPERATORS[op_key]
    descs = {c.desc for c in sweep("default", op_key)}
    assert descs
    for d in descs:
        written = json.loads(json.dumps(d.to_dict()))
        assert {f.name for f in dataclasses.fields(d)} == set(written)
        back = op.Desc.from_dict(written)
        assert type(back) is type(d) and back.to_dict() == d.to_dict()
        assert back == d and hash(back) == hash(d)        # lists read back as the tuples they were
        assert op.Desc.from_dict(back.to_dict()) == back


@pytest.mark.parametrize("op_key", OPS)
def test_a_field_that_may_be_left_empty_is_typed_too(op_key):
    """A field whose value may be none (``X | None``): None reads as none, a value of another kind
    is refused naming the field, as for every other field."""
    import typing
    op = registry.OPERATORS[op_key]
    base = sample(op_key).desc.to_dict()
    hints = typing.get_type_hints(op.Desc)
    wrong = {tuple: ("four", "must be a list"), str: (5, "must be a string"), int: ("four", "must be an integer"),
             bool: ("four", "must be a boolean"), float: ("four", "must be a number")}
    for f in dataclasses.fields(op.Desc):
        args = typing.get_args(hints[f.name])
        if type(None) not in args:
            continue
        assert getattr(op.Desc.from_dict({**base, f.name: None}), f.name) is None
        inner = next(a for a in args if a is not type(None))
        value, words = wrong[typing.get_origin(inner) or inner]
        refused(lambda: op.Desc.from_dict({**base, f.name: value}), f.name, words)


@pytest.mark.parametrize("op_key", OPS)
def test_a_field_not_of_the_struct_is_refused_by_name(op_key):
    op = registry.OPERATORS[op_key]
    base = sample(op_key).desc.to_dict()
    refused(lambda: op.Desc.from_dict({**base, "PaddingMode": 1}), "PaddingMode", "not a field", op.Desc.__name__)


@pytest.mark.parametrize("op_key", OPS)
def test_each_required_field_left_out_is_refused_by_name(op_key):
    op = registry.OPERATORS[op_key]
    base = sample(op_key).desc.to_dict()
    required = [f.name for f in dataclasses.fields(op.Desc)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    assert "InputSizes" in required and "DataType" in required
    for name in required:
        refused(lambda: op.Desc.from_dict({k: v for k, v in base.items() if k != name}), name, "required")
    optional = [f.name for f in dataclasses.fields(op.Desc) if f.name not in required]
    for name in optional:                    # left out: its default
        d = op.Desc.from_dict({k: v for k, v in base.items() if k != name})
        assert getattr(d, name) == next(f.default for f in dataclasses.fields(op.Desc) if f.name == name)


@pytest.mark.parametrize("op_key", OPS)
def test_a_list_field_given_a_word_is_refused_by_name(op_key):
    op = registry.OPERATORS[op_key]
    base = sample(op_key).desc.to_dict()
    lists = [k for k, v in base.items() if isinstance(v, list)]
    assert "InputSizes" in lists
    for name in lists:
        refused(lambda: op.Desc.from_dict({**base, name: "four"}), name, "must be a list")


@pytest.mark.parametrize("op_key", OPS)
@pytest.mark.parametrize("spelling", ["FLOAT16", "float16", "f16", "DML_TENSOR_DATA_TYPE_FLOAT16"])
def test_data_type_spellings(op_key, spelling):
    op = registry.OPERATORS[op_key]
    base = sample(op_key).desc.to_dict()
    assert op.Desc.from_dict({**base, "DataType": spelling}).DataType == "FLOAT16"
    refused(lambda: op.Desc.from_dict({**base, "DataType": "FLOAT17"}), "DataType")


@pytest.mark.parametrize("op_key", OPS)
def test_an_unknown_onnx_option_is_refused_by_name(op_key):
    op = registry.OPERATORS[op_key]
    case = sample(op_key)
    op.check_variant(case)
    bad = dataclasses.replace(case, variant=make_variant(**case.v, bogus=1))
    refused(lambda: op.check_variant(bad), "onnx.bogus", "not an ONNX-side option")


@pytest.mark.parametrize("op_key", OPS)
def test_a_value_outside_an_options_list_is_refused_by_name(op_key):
    op = registry.OPERATORS[op_key]
    case = sample(op_key)
    closed = {k: v for k, v in op.variant_keys.items() if v is not None}
    for key, allowed in closed.items():
        bad = dataclasses.replace(case, variant=make_variant(**{**case.v, key: "no-such-value"}))
        refused(lambda: op.check_variant(bad), f"onnx.{key}", "must be one of")


@pytest.mark.parametrize("op_key", OPS)
def test_a_tensor_beyond_the_runs_limit_is_refused_when_the_case_is_loaded(op_key):
    """Not with a MemoryError in the middle of a run: the case file names the tensor and says the
    limit is the bench's, not DirectML's; at the limit the case loads."""
    op = registry.OPERATORS[op_key]
    case = sample(op_key)
    entry = {"op": op.key, "descriptor": case.desc.to_dict(), "onnx": dict(case.v), "opset": case.opset,
             "inputs": {"family": "random", "seed": 1}}
    largest = max(math.prod(s) for s in [*op.input_shapes(case.desc).values(), op.output_shape(case.desc)])
    assert case_from_dict(entry, max_elements=largest).desc.to_dict() == case.desc.to_dict()
    beyond = r"descriptor\.\S+\.Sizes: .* more than this bench runs .*not a DirectML rule"
    with pytest.raises(CaseFileError, match=beyond):
        case_from_dict(entry, max_elements=largest - 1)


@pytest.mark.parametrize("op_key", OPS)
def test_every_data_type_of_the_page_is_swept_or_declared_not_expressible(op_key):
    """Each DML type of the operator's table at its highest feature level appears in the default
    sweep or is listed as not expressible in ONNX (counted in coverage, never silently dropped)."""
    op = registry.OPERATORS[op_key]
    table = op.types_by_level
    assert table and set(table) <= set(FEATURE_LEVELS)
    dml = set(table[max(table, key=FEATURE_LEVELS.index)])
    seen = {c.dtype for c in sweep("default", op_key)}
    not_expr = {n.data_type for n in op.not_expressible() if n.data_type and n.capability.startswith("InputTensor")}
    assert dml <= seen | not_expr
    assert not seen & not_expr
    assert seen <= set(DML_TYPES)


@pytest.mark.parametrize("op_key", OPS)
def test_the_layers_perf_times_by_default_are_admitted_and_named_once(op_key):
    """``perf``'s default layers (``Operator.perf_cases``): each admitted as a run admits it, of the
    declared activation, named once across every operator (perf-compare matches them by name)."""
    from onnx_dml_bench.ops.base import PERF_SIZES
    op = registry.get(op_key)
    for name, case in op.perf_cases():
        assert case.op == op_key and case.desc.InputSizes == PERF_SIZES, name
        assert op.admit(case).ok, (name, op.admit(case))
    names = [name for key in OPS for name, _ in registry.get(key).perf_cases()]
    assert len(names) == len(set(names)) and len(names) >= 5
