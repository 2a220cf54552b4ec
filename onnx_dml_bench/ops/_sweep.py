"""Small helpers the operators' sweeps share: deterministic selection and per-profile budgets."""
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
