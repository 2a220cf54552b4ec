"""Operator name -> operator, discovered from the modules of ``onnx_dml_bench.ops``.

Adding a DirectML operator is adding one module to ``ops/`` that binds an :class:`Operator`
instance to a module-level name and lists it in ``OPERATORS`` (see ARCHITECTURE.md). Modules
whose name starts with an underscore, and ``base``, hold shared machinery, not operators.
"""
from __future__ import annotations

import importlib
import pkgutil

from . import ops
from .ops.base import Operator


def _discover() -> dict[str, Operator]:
    found: dict[str, Operator] = {}
    for info in sorted(pkgutil.iter_modules(ops.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{ops.__name__}.{info.name}")
        for op in getattr(module, "OPERATORS", ()):
            if not isinstance(op, Operator):
                raise TypeError(f"{module.__name__}.OPERATORS holds {op!r}, not an Operator")
            if op.key in found:
                raise ValueError(f"operator {op.key!r} is defined twice ({module.__name__})")
            found[op.key] = op
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


OPERATORS: dict[str, Operator] = _discover()

ALIASES = {op.dml_name: key for key, op in OPERATORS.items()}
ALIASES.update({op.short: key for key, op in OPERATORS.items()})


def get(name: str) -> Operator:
    key = ALIASES.get(name, name)
    try:
        return OPERATORS[key.lower()]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(OPERATORS)}") from None


def names() -> list[str]:
    return list(OPERATORS)


def split_names(values) -> list[str]:
    """Names as a command line gives them: a repeatable option, each value a comma-separated list
    (``--op max_pooling2,roi --op mp2``), in order, blanks dropped."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]
