"""A case: one operator descriptor, its ONNX-side options, opset and input data, with a stable id."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .dtypes import DML_TO_NUMPY, SHORT
from .record import jsonable, number


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


@dataclass(frozen=True)
class Case:
    operator: Any                            # the ops.base.Operator (a module-level singleton)
    desc: Any                                # the operator's frozen descriptor
    opset: int
    variant: tuple[tuple[str, Any], ...] = ()  # ONNX-side options (ceil_mode, auto_pad, form, ...)
    family: str = "random"                   # input family; "explicit" when values are given
    seed: int = 0
    values: tuple[tuple[str, tuple], ...] | None = None  # explicit inputs: (name, flat values)
    #: where the case comes from, for a person (not part of its identity): the real layers and models
    #: of a ``networks`` case, the boundary a ``limits`` case probes; a JSON-safe mapping
    source: dict | None = field(default=None, compare=False, repr=False)

    # -- identity -----------------------------------------------------------------------------
    @cached_property
    def id(self) -> str:
        op = self.operator
        body = canonical_json(self.identity())
        digest = hashlib.sha256(body.encode()).hexdigest()[:10]
        label = op.label(self.desc, self.v)
        parts = [op.short, SHORT[self.desc.DataType], label, self.family, f"o{self.opset}", digest]
        return "-".join(p for p in parts if p)

    def identity(self) -> dict:
        """Everything that defines the case (the id is a hash of this)."""
        d = {"op": self.op, "descriptor": self.desc.to_dict(), "opset": self.opset,
             "onnx": dict(self.variant), "family": self.family, "seed": self.seed}
        if self.values is not None:
            d["values"] = {k: list(v) for k, v in self.values}
        return d

    @property
    def v(self) -> dict:
        return dict(self.variant)

    @property
    def op(self) -> str:
        """The operator's registry key, e.g. "max_pooling2"."""
        return self.operator.key

    @property
    def dtype(self) -> str:
        return self.desc.DataType

    def with_opset(self, opset: int) -> "Case":
        """The case at another opset (the operator's ``at_opset``: the same ONNX-side options)."""
        at = getattr(self.operator, "at_opset", None)
        return at(self, opset) if at is not None else replace(self, opset=opset)

    # -- serialisation (case files) -------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {"id": self.id, "op": self.op, "opset": self.opset, "descriptor": self.desc.to_dict()}
        if self.variant:
            d["onnx"] = dict(self.operator.onnx_options(self))
        if self.values is not None:
            d["inputs"] = {"values": {k: jsonable(list(v)) for k, v in self.values}}
        else:
            d["inputs"] = {"family": self.family, "seed": self.seed}
        if self.source:
            d["source"] = self.source
        return d

    # -- data ---------------------------------------------------------------------------------
    def inputs(self) -> dict[str, np.ndarray]:
        op = self.operator
        if self.values is not None:
            shapes, types = op.input_shapes(self.desc), op.input_types(self.desc)
            out = {}
            for name, flat in self.values:
                dt = DML_TO_NUMPY[types.get(name, self.desc.DataType)]
                out[name] = np.array([number(x) for x in flat], dtype=dt).reshape(shapes[name])
            return out
        return op.make_inputs(self)


def make_variant(**kw) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, v) for k, v in kw.items() if v is not None))


def seed_for(*parts: Any) -> int:
    """A stable 32-bit seed from arbitrary parts (same on every machine and Python run)."""
    return int.from_bytes(hashlib.sha256(canonical_json(list(parts)).encode()).digest()[:4], "little")
