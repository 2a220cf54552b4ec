"""Small helpers the operators' sweeps share: deterministic selection, per-profile budgets, and
tables of named parameter rows (:func:`params`, :func:`table`)."""
from __future__ import annotations

import numpy as np

from ..cases import seed_for

PROFILES = ("smoke", "default", "full")
#: the profiles of real sizes (``Operator.sized_sweep``): the census's layers, and GPU limits; their
#: cases are sized by the run's limit (``--max-elements``)
SIZED_PROFILES = ("networks", "limits")


def check_profile(profile: str) -> None:
    """The profiles of ``Operator.sweep`` (the sized ones are ``Operator.sized_sweep``'s)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}"
                         + (f" ({profile} is a sized profile: Operator.sized_sweep)" if profile in SIZED_PROFILES else ""))


def rng(*parts) -> np.random.Generator:
    return np.random.default_rng(seed_for(*parts))


def rotate(seq, i: int, n: int) -> list:
    """n items of seq starting at position i (wrapping): spreads families over geometries."""
    seq = list(seq)
    if n >= len(seq):
        return seq
    return [seq[(i + j) % len(seq)] for j in range(n)]


def thin(cases: list, n: int, key: str, strata=lambda c: (c.desc.DataType, c.family)) -> list:
    """A deterministic subset of about n cases, stratified so that every distinct value of
    ``strata(case)`` (default: data type and family) keeps at least one case."""
    if n >= len(cases):
        return cases
    g = rng("thin", key)
    order = g.permutation(len(cases))
    chosen: dict[int, None] = {}
    seen = set()
    for i in order:
        key_ = strata(cases[i])
        if key_ not in seen:
            seen.add(key_)
            chosen[int(i)] = None
    for i in order:
        if len(chosen) >= n:
            break
        chosen.setdefault(int(i), None)
    chosen = sorted(chosen)
    return [cases[i] for i in chosen]


class Row(dict):
    """One row of a :class:`Params` table: named values, read as ``row.name`` or ``row["name"]``."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Params:
    """A table of named parameter rows, built step by step (after gpuweb/cts's
    ``params().combine()``): :func:`params` starts one empty row, :func:`table` literal rows (values
    named by ``keys``); ``combine`` crosses every row with each value of a new key, ``expand`` with
    the values a function of the row gives, ``filter`` keeps the rows a predicate accepts, ``+``
    puts two tables one after the other. Each step returns a new table, in row order; a key given
    twice is refused (one name, one meaning)."""

    def __init__(self, rows: tuple = ()):
        self._rows = tuple(rows)

    def combine(self, key: str, values) -> "Params":
        return self.expand(key, lambda row: values)

    def expand(self, key: str, values_of) -> "Params":
        if any(key in r for r in self._rows):
            raise ValueError(f"key {key!r} is already a parameter of these rows")
        return Params(tuple(Row(r, **{key: v}) for r in self._rows for v in values_of(r)))

    def filter(self, keep) -> "Params":
        return Params(tuple(r for r in self._rows if keep(r)))

    def __add__(self, other: "Params") -> "Params":
        return Params(self._rows + other._rows)

    def __iter__(self):
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def params() -> Params:
    """One empty row, to ``combine`` and ``expand`` (:class:`Params`)."""
    return Params((Row(),))


def table(keys: str, *values) -> Params:
    """Literal rows: each a tuple of values named by ``keys`` (names separated by spaces)."""
    names = tuple(keys.split())
    for v in values:
        if len(v) != len(names):
            raise ValueError(f"a row of {len(v)} values for the {len(names)} keys {keys!r}: {v!r}")
    return Params(tuple(Row(zip(names, v)) for v in values))
