"""The descriptors of the operators: the frozen dataclass every descriptor is (fields named after
directml.h, read from a case file's mapping with each field's type), the error that names the DML
field a rule is about, and the checks the operators' ``validate`` share (UINT fields, the input's
rank and sizes, data types per feature level, the bench's own size limit). ``ops.base`` re-exports
all of it: the operators' contract is read there."""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import FEATURE_LEVELS, fl_at_least, parse_dtype


class DescriptorError(ValueError):
    """A descriptor DirectML would reject. ``field`` names the DML struct field, ``rule`` the rule."""

    def __init__(self, field_name: str, rule: str):
        self.field = field_name
        self.rule = rule
        super().__init__(f"{field_name}: {rule}")


def _coerce(name: str, tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(name, inner[0], value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise DescriptorError(name, f"must be a list, got {type(value).__name__} {value!r}")
        elem = args[0] if args else int
        return tuple(_coerce(f"{name}[{i}]", elem, v) for i, v in enumerate(value))
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        raise DescriptorError(name, f"must be a boolean, got {value!r}")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise DescriptorError(name, f"must be an integer, got {value!r}")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise DescriptorError(name, f"must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise DescriptorError(name, f"must be a string, got {value!r}")
        return value
    return value


@dataclass(frozen=True)
class Descriptor:
    """Base of the operator descriptors. Subclasses add the DML struct's fields.

    ``InputSizes`` and ``DataType`` stand for the InputTensor's DML_TENSOR_DESC; ``FeatureLevel``
    is the DML feature level the descriptor is validated against.
    """

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Descriptor":
        if not isinstance(data, dict):
            raise DescriptorError("descriptor", f"must be a mapping of DML fields, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise DescriptorError(unknown[0], f"is not a field of {cls.__name__} (fields: {', '.join(sorted(names))})")
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                    raise DescriptorError(f.name, "is required")
                continue
            value = data[f.name]
            if f.name == "DataType":
                try:
                    value = parse_dtype(value)
                except ValueError as e:
                    raise DescriptorError("DataType", str(e)) from None
            kwargs[f.name] = _coerce(f.name, hints[f.name], value)
        return cls(**kwargs)

    def replace(self, **changes) -> "Descriptor":
        return dataclasses.replace(self, **changes)


#: DirectML's UINT (sizes, strides, window sizes, pads of its descriptors)
UINT_MAX = 2**32 - 1
#: the largest tensor, in elements, this bench builds, runs and compares by default (256 MiB of
#: float32): a case beyond it is refused at load time naming the tensor. A limit of the bench (its
#: references work in float64 on one machine), not a DirectML rule; ``--max-elements`` raises it
#: for a run (a machine with the memory for it).
MAX_TENSOR_ELEMENTS = 2**26


def check_uint(field_name: str, values) -> None:
    """Descriptor fields typed UINT in directml.h: 0 <= v <= 2**32 - 1."""
    if any(v < 0 or v > UINT_MAX for v in values):
        raise DescriptorError(field_name, f"values are UINT and must be in [0, {UINT_MAX}], got {list(values)}")


def check_bench_size(field_name: str, what: str, shape, limit: int | None = None) -> None:
    """Refuse a tensor larger than ``limit`` elements (default :data:`MAX_TENSOR_ELEMENTS`), before
    anything allocates it."""
    limit = MAX_TENSOR_ELEMENTS if limit is None else limit
    n = math.prod(int(v) for v in shape)
    if n > limit:
        raise DescriptorError(field_name, f"{what} {list(shape)} would have {n:,} elements, more than this bench "
                                          f"runs ({limit:,} per tensor; a limit of the bench, not a DirectML "
                                          "rule: run --max-elements raises it)")


def check_input_sizes(sizes, ranks: tuple[int, ...] = (4,), layout: str = "") -> None:
    """The InputTensor's sizes: one of ``ranks`` dimensions, every size >= 1."""
    rank = len(sizes)
    if rank not in ranks:
        want = " or ".join(map(str, ranks))
        raise DescriptorError("InputTensor.DimensionCount",
                              f"InputTensor must be {want}-D{layout}, got {rank}-D (InputSizes {list(sizes)})")
    if any(s < 1 for s in sizes):
        raise DescriptorError("InputTensor.Sizes", f"every size must be >= 1, got {list(sizes)}")
    check_uint("InputTensor.Sizes", sizes)


def check_type_at_level(desc: Any, field_name: str, dml_type: str, table: dict[str, tuple[str, ...]]) -> None:
    """``table``: feature level -> data types supported from that level on (cumulative tables of
    the DML pages). Raise unless ``dml_type`` is allowed at ``desc.FeatureLevel``."""
    level = desc.FeatureLevel
    if level not in FEATURE_LEVELS:
        raise DescriptorError("FeatureLevel", f"must be one of {', '.join(FEATURE_LEVELS)}, got {level!r}")
    allowed: set[str] = set()
    first = None
    for fl, types in sorted(table.items(), key=lambda kv: FEATURE_LEVELS.index(kv[0])):
        if dml_type in types and first is None:
            first = fl
        if fl_at_least(level, fl):
            allowed = set(types)
    if dml_type not in allowed:
        if first is None:
            raise DescriptorError(field_name, f"{dml_type} is not supported by this operator at any feature level")
        if not fl_at_least(level, min(table, key=FEATURE_LEVELS.index)):
            raise DescriptorError("FeatureLevel", f"operator needs feature level {min(table, key=FEATURE_LEVELS.index)} or above, got {level}")
        raise DescriptorError(field_name, f"{dml_type} needs DML_FEATURE_LEVEL_{first.replace('.', '_')} or above (descriptor is at {level})")
