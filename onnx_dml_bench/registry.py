"""Operator name -> operator module. The only place a new DirectML operator is registered."""
from __future__ import annotations

from .ops import average_pooling1, max_pooling2, roi_pooling, space_depth

OPERATORS = {
    "max_pooling2": max_pooling2.OP,
    "average_pooling1": average_pooling1.OP,
    "roi_pooling": roi_pooling.OP,
    "space_to_depth1": space_depth.SPACE_TO_DEPTH1,
    "depth_to_space1": space_depth.DEPTH_TO_SPACE1,
}

ALIASES = {op.dml_name: key for key, op in OPERATORS.items()}
ALIASES.update({op.short: key for key, op in OPERATORS.items()})


def get(name: str):
    key = ALIASES.get(name, name)
    try:
        return OPERATORS[key.lower()]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(OPERATORS)}") from None


def names() -> list[str]:
    return list(OPERATORS)
