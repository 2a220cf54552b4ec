"""Shrinking a failing case to its smallest form that fails the same way.

The reducer, :func:`reduce`, takes a value and a predicate, as hypothesis' shrinker does: a case
(with the witness that it holds, e.g. its record) and ``holds(candidates) -> {case id: witness}``,
which answers a whole round of candidate cases at once and names those that still hold. It knows
nothing of EPs, processes or files. It reduces the case in two kinds of steps:

- structure: a greedy reducer over the descriptor's own fields (every integer and integer tuple
  toward 0 or 1: batch, channels, spatial sizes, window, strides, dilations, pads; booleans to
  false; optional fields to absent) and the ONNX-side options (dropped); of the candidates that
  hold, the smallest is taken, until none does. When the input shape shrinks, the input data is
  cropped (from the start or from the end of the axis), so the data that made the failure
  travels with the structure;
- data: delta debugging (ddmin, Zeller and Hildebrandt) over the input elements: an element that
  does not matter is set to its *neutral* value. Neutral values are a background of distinct
  values below the data (-1, -2, -3, ... for floats and signed integers, 0, 1, 2, ... for
  unsigned ones): neutral elements never tie with each other, so what remains is what makes the
  failure (the two elements of a tie, the NaN of a NaN failure). Then the value range shrinks:
  the remaining values are renumbered by rank (order and equality kept) and each distinct value
  is tried at 0, 1, -1 and its integer part.

:func:`shrink` is the reducer with the predicate the bench shrinks by: a failure's *signature*
(``signature.py``: operator, verdict, attribution, set of failing outputs, labels of the failure)
must hold on the way — a tie-order failure must stay a tie-order failure, not turn into a shape
failure. Its ``probe`` runs a round of cases on the EP and returns their records
(``prober.Prober``: one batch on the real EP).

The data is carried as explicit values (case family "explicit", ``Case.values``), so the
minimal case is a case file (``casefile``) that ``run --cases`` reproduces.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..cases import Case
from ..dtypes import DML_TO_NUMPY
from ..signature import Signature, signature

#: descriptor fields never changed by the reducer (they name what is tested, not its size)
FIXED_FIELDS = ("DataType", "FeatureLevel", "DimensionCount")


# ----------------------------------------------------------------------------------------------
# Explicit data with a neutral background
# ----------------------------------------------------------------------------------------------

def background(shape, dml_type: str) -> np.ndarray:
    """Neutral values: distinct, below the data: -1, -2, ... (floats, signed integers; wrapping
    within the type's range) or 0, 1, 2, ... (unsigned)."""
    dt = np.dtype(DML_TO_NUMPY[dml_type])
    n = int(np.prod(shape)) if len(shape) else 1
    i = np.arange(n, dtype=np.int64)
    if dt.kind == "f":
        vals = -(i + 1).astype(np.float64)
    elif dt.kind == "i":
        lo = int(np.iinfo(dt).min)
        vals = -(i % (-lo)) - 1
    else:
        vals = i % (int(np.iinfo(dt).max) + 1)
    return vals.astype(dt).reshape(shape)


def _flat(arr: np.ndarray) -> tuple:
    if arr.dtype.kind == "f":
        return tuple(float(x) for x in arr.reshape(-1))
    return tuple(int(x) for x in arr.reshape(-1))


def with_values(case: Case, arrays: dict[str, np.ndarray]) -> Case:
    """The case with explicit input values ``arrays`` (family "explicit")."""
    vals = tuple(sorted((k, _flat(v)) for k, v in arrays.items()))
    return dataclasses.replace(case, family="explicit", seed=0, values=vals)


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: same value, NaN equal to NaN, -0.0 apart from +0.0."""
    if a.dtype.kind == "f":
        return (a.view(f"u{a.dtype.itemsize}") == b.view(f"u{b.dtype.itemsize}")) | (np.isnan(a) & np.isnan(b))
    return a == b


@dataclass
class State:
    """A candidate: the case (explicit values) and, per input, which elements are neutral."""
    case: Case
    neutral: dict[str, np.ndarray]           # name -> bool mask, True where the element is background

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return self.case.inputs()

    def non_neutral(self) -> int:
        return int(sum((~m).sum() for m in self.neutral.values()))

    def elements(self) -> int:
        return int(sum(m.size for m in self.neutral.values()))


def state_of(case: Case) -> State:
    arrays = case.inputs()
    case = with_values(case, arrays)
    neutral = {k: _same_bits(v, background(v.shape, case.desc.DataType)) for k, v in arrays.items()}
    return State(case, neutral)


def _rebuild(case: Case, arrays: dict[str, np.ndarray], neutral: dict[str, np.ndarray]) -> State:
    """Neutral elements take the background of their (possibly new) shape."""
    out = {}
    for k, v in arrays.items():
        bg = background(v.shape, case.desc.DataType)
        out[k] = np.where(neutral[k], bg, v).astype(v.dtype)
    return State(with_values(case, out), {k: m.copy() for k, m in neutral.items()})


# ----------------------------------------------------------------------------------------------
# Sizes
# ----------------------------------------------------------------------------------------------

def _desc_ints(desc) -> int:
    total = 0
    for f in dataclasses.fields(desc):
        if f.name in FIXED_FIELDS:
            continue
        v = getattr(desc, f.name)
        if isinstance(v, bool):
            total += int(v)
        elif isinstance(v, int):
            total += v
        elif isinstance(v, float):
            total += 0 if v == 1.0 else 1
        elif isinstance(v, tuple):
            total += sum(x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool))
        elif isinstance(v, str) and f.default is None:
            total += 1
    return total


def _value_cost(state: State) -> float:
    cost = 0.0
    for k, v in state.arrays.items():
        vals = v[~state.neutral[k]].astype(np.float64)
        fin = vals[np.isfinite(vals)]
        cost += float(np.sum(np.minimum(np.abs(fin), 1e6))) + 10.0 * float(np.sum(fin != np.round(fin)))
    return cost


def size_key(state: State) -> tuple:
    """Smaller is simpler: input elements, descriptor numbers, ONNX-side options, non-neutral
    elements, value range."""
    opts = sum(1 for k, v in state.case.variant if v not in (0, "NOTSET", None))
    return (state.elements(), _desc_ints(state.case.desc), opts, state.non_neutral(), _value_cost(state))


def describe(case: Case) -> str:
    """A compact geometry, e.g. ``2x3x9x9 k3 s1 d2 p1111 ceil_mode=1``: the case's operator
    describes it (``Operator.describe``)."""
    return case.operator.describe(case)


# ----------------------------------------------------------------------------------------------
# Structure candidates
# ----------------------------------------------------------------------------------------------

def _smaller(v: int, floor: int = 0) -> list[int]:
    return sorted({x for x in (floor, 1, v // 2, v - 1) if floor <= x < v}, reverse=False)


def _desc_changes(desc) -> list[dict]:
    """Single-field changes of a descriptor toward simpler values."""
    out = []
    for f in dataclasses.fields(desc):
        if f.name in FIXED_FIELDS:
            continue
        v = getattr(desc, f.name)
        if isinstance(v, bool):
            if v:
                out.append({f.name: False})
        elif isinstance(v, int):
            out += [{f.name: x} for x in _smaller(v)]
        elif isinstance(v, float):
            if v != 1.0:
                out.append({f.name: 1.0})
        elif isinstance(v, tuple) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            for i, x in enumerate(v):
                out += [{f.name: v[:i] + (y,) + v[i + 1:]} for y in _smaller(x)]
            floor = tuple(min(_smaller(x) or [x]) for x in v)
            if floor != v and sum(1 for a, b in zip(floor, v) if a != b) > 1:
                out.append({f.name: floor})
        elif isinstance(v, str) and f.default is None:
            out.append({f.name: None})
    return out


def _valid(case: Case) -> bool:
    """The candidate passes the operator's admission check up to its data (an exception in it
    counts as a refusal)."""
    try:
        return case.operator.admit(case, size=False, data=False).ok
    except Exception:  # noqa: BLE001
        return False


def _data_ok(case: Case) -> bool:
    """The candidate's data keeps the operator's preconditions on tensor data (a ROI's batch
    index and corner order): a failure on invalid data is no failure of the EP."""
    try:
        return case.operator.admit_data(case).ok
    except Exception:  # noqa: BLE001
        return False


def _crops(old: tuple, new: tuple) -> list[tuple]:
    """Slices taking an array of shape ``old`` to ``new``: from the start, from the end."""
    if any(n > o for n, o in zip(new, old)) or len(new) != len(old):
        return []
    start = tuple(slice(0, n) for n in new)
    end = tuple(slice(o - n, o) for n, o in zip(new, old))
    return [start] if start == end else [start, end]


def _reshaped_candidates(state: State) -> list[State]:
    """The operator's own smaller forms of the case (``Operator.shrink_candidates``: the same input
    elements in other shapes, e.g. a pooling axis of size 1 dropped), valid ones, with the data
    reshaped to them."""
    out = []
    for c in state.case.operator.shrink_candidates(state.case):
        if not _valid(c):
            continue
        shapes = c.operator.input_shapes(c.desc)
        arrays, neutral = state.arrays, {}
        new_arrays = {}
        for k, v in arrays.items():
            shape = tuple(shapes[k])
            if int(np.prod(shape)) != v.size:
                break
            new_arrays[k] = v.reshape(shape)
            neutral[k] = state.neutral[k].reshape(shape)
        else:
            out.append(_rebuild(c, new_arrays, neutral))
    return out


def structure_candidates(state: State) -> list[State]:
    case = state.case
    op = case.operator
    arrays = state.arrays
    old_shapes = {k: v.shape for k, v in arrays.items()}
    cases = []
    for change in _desc_changes(case.desc):
        try:
            desc = case.desc.replace(**change)
        except (TypeError, ValueError):
            continue
        cases.append(dataclasses.replace(case, desc=desc))
    for k, v in case.variant:
        if v not in (0, "NOTSET", None):
            cases.append(dataclasses.replace(case, variant=tuple(kv for kv in case.variant if kv[0] != k)))
    out = _reshaped_candidates(state)
    for c in cases:
        c = op.normalize(c)
        if not _valid(c):
            continue
        try:
            new_shapes = op.input_shapes(c.desc)
        except Exception:  # noqa: BLE001
            continue
        if {k: tuple(s) for k, s in new_shapes.items()} == old_shapes:
            out.append(State(with_values(c, arrays), state.neutral))
            continue
        options = [[]]
        for k, shape in new_shapes.items():
            crops = _crops(old_shapes[k], tuple(shape))
            if not crops:
                options = []
                break
            options = [o + [(k, s)] for o in options for s in crops] if len(crops) > 1 and len(options) < 4 \
                else [o + [(k, crops[0])] for o in options]
        for opt in options:
            arr = {k: arrays[k][s] for k, s in opt}
            neu = {k: state.neutral[k][s] for k, s in opt}
            out.append(_rebuild(c, arr, neu))
    return out


# ----------------------------------------------------------------------------------------------
# Data candidates
# ----------------------------------------------------------------------------------------------

def _positions(state: State) -> list[tuple[str, int]]:
    return [(k, int(i)) for k in sorted(state.neutral) for i in np.flatnonzero(~state.neutral[k].reshape(-1))]


def _keep_only(state: State, keep: set) -> State:
    neutral = {k: np.ones_like(m) for k, m in state.neutral.items()}
    for k, i in keep:
        neutral[k].reshape(-1)[i] = False
    neutral = {k: neutral[k] | state.neutral[k] for k in neutral}
    return _rebuild(state.case, state.arrays, neutral)


def _value_candidates(state: State) -> list[State]:
    arrays = state.arrays
    out = []
    finite = {}
    for k, v in arrays.items():
        x = v.astype(np.float64)
        finite[k] = ~state.neutral[k] & np.isfinite(x)
    allv = np.concatenate([arrays[k].astype(np.float64)[finite[k]] for k in arrays] or [np.zeros(0)])
    pos, neg = np.unique(allv[allv > 0]), np.unique(allv[allv < 0])
    # renumber by rank, sign and equality kept: positives 1..p, negatives -1..-q (nearest zero
    # first), zeros and non-finite values as they are
    if len(pos) + len(neg) and max(len(pos), len(neg)) <= 100:
        ranked = {}
        for k, v in arrays.items():
            x = v.astype(np.float64)
            nv = x.copy()
            sel = finite[k] & (x > 0)
            nv[sel] = np.searchsorted(pos, x[sel]) + 1
            sel = finite[k] & (x < 0)
            nv[sel] = -(len(neg) - np.searchsorted(neg, x[sel]))
            ranked[k] = np.where(finite[k], nv, x).astype(v.dtype) if v.dtype.kind == "f" else \
                np.where(finite[k], nv, x).astype(np.int64).astype(v.dtype)
        if any(not np.array_equal(ranked[k], arrays[k]) for k in arrays):
            out.append(_rebuild(state.case, ranked, state.neutral))
    # each distinct non-zero value (all its occurrences at once, so ties stay ties) toward 0, 1,
    # -1 and its integer part
    for u in np.unique(allv[allv != 0])[:24]:
        for target in sorted({0.0, 1.0, -1.0, float(math.trunc(u))}, key=abs):
            if target == u:
                continue
            new = {}
            for k, v in arrays.items():
                m = finite[k] & (v.astype(np.float64) == u)
                nv = v.copy()
                if m.any():
                    if v.dtype.kind == "u" and target < 0:
                        new = None
                        break
                    nv[m] = np.array(target).astype(v.dtype)
                new[k] = nv
            if new is not None:
                out.append(_rebuild(state.case, new, state.neutral))
    return out


# ----------------------------------------------------------------------------------------------
# The reducer: a value and a predicate
# ----------------------------------------------------------------------------------------------

#: a round of candidate cases -> {case id: witness} of the candidates that hold
Holds = Callable[[list[Case]], dict]


@dataclass
class Reduction:
    """Where :func:`reduce` stopped: the smallest state that holds, its witness, the rounds asked
    (those counted before it started included) and the steps taken."""
    best: State
    witness: object
    rounds: int
    steps: list[str]


def reduce(start: State, witness, holds: Holds, *, rounds: int = 0, max_rounds: int = 300,
           deadline: float | None = None) -> Reduction:
    """Reduce ``start`` (which holds, with ``witness``) while ``holds`` says a candidate still
    holds, until no step moves or the budget ends: ``max_rounds`` rounds (``rounds`` already
    spent) or the ``time.perf_counter()`` ``deadline``."""
    best, best_w = start, witness
    steps: list[str] = []

    def out_of_budget() -> bool:
        return rounds >= max_rounds or (deadline is not None and time.perf_counter() > deadline)

    def holding(cands: list[State]) -> list[tuple[State, object]]:
        nonlocal rounds
        cands = [c for c in cands if c.case.id != best.case.id and _data_ok(c.case)]
        if not cands:
            return []
        held = holds([c.case for c in cands])
        rounds += 1
        return [(c, held[c.case.id]) for c in cands if c.case.id in held]

    def structure() -> bool:
        nonlocal best, best_w
        moved = False
        while not out_of_budget():
            ok = [(s, w) for s, w in holding(structure_candidates(best)) if size_key(s) < size_key(best)]
            if not ok:
                break
            s, w = min(ok, key=lambda sw: size_key(sw[0]))
            steps.append(f"structure: {describe(best.case)} -> {describe(s.case)}")
            best, best_w, moved = s, w, True
        return moved

    def ddmin() -> bool:
        nonlocal best, best_w
        moved = False
        keep = _positions(best)
        if not keep:
            return False
        empty = holding([_keep_only(best, set())])
        if empty:
            best, best_w = empty[0]
            steps.append("data: every element neutral")
            return True
        n = 2
        while len(keep) >= 2 and not out_of_budget():
            n = min(n, len(keep))
            chunks = [keep[i * len(keep) // n:(i + 1) * len(keep) // n] for i in range(n)]
            subsets = [_keep_only(best, set(ch)) for ch in chunks]
            comps = [_keep_only(best, set(keep) - set(ch)) for ch in chunks] if n > 2 else []
            ok = holding(subsets + comps)
            ok_ids = {s.case.id for s, _ in ok}
            by_id = {s.case.id: (s, w) for s, w in ok}
            pick = next((i for i, s in enumerate(subsets) if s.case.id in ok_ids), None)
            if pick is not None:
                best, best_w = by_id[subsets[pick].case.id]
                keep, n, moved = list(chunks[pick]), 2, True
                continue
            pick = next((i for i, s in enumerate(comps) if s.case.id in ok_ids), None)
            if pick is not None:
                best, best_w = by_id[comps[pick].case.id]
                keep = [p for p in keep if p not in set(chunks[pick])]
                n, moved = max(n - 1, 2), True
                continue
            if n >= len(keep):
                break
            n = min(len(keep), 2 * n)
        if moved:
            steps.append(f"data: {len(_positions(best))} non-neutral elements")
        return moved

    def values() -> bool:
        nonlocal best, best_w
        moved = False
        while not out_of_budget():
            ok = [(s, w) for s, w in holding(_value_candidates(best)) if size_key(s) < size_key(best)]
            if not ok:
                break
            best, best_w = min(ok, key=lambda sw: size_key(sw[0]))
            moved = True
        if moved:
            steps.append("values: range shrunk")
        return moved

    for _ in range(8):
        moved = structure()
        moved = ddmin() or moved
        moved = values() or moved
        if not moved or out_of_budget():
            break
    return Reduction(best, best_w, rounds, steps)


# ----------------------------------------------------------------------------------------------
# Shrinking a failure: the reducer with its signature as the predicate
# ----------------------------------------------------------------------------------------------

class NotReproduced(RuntimeError):
    """The case does not fail with the expected signature on the EP at the start of the shrink."""


@dataclass
class ShrinkResult:
    original: Case
    minimal: Case
    signature: Signature
    record: object = None                     # the minimal case's record
    rounds: int = 0
    probes: int = 0
    seconds: float = 0.0
    elements_before: int = 0
    elements_after: int = 0
    non_neutral_before: int = 0
    non_neutral_after: int = 0
    steps: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{describe(self.original)} -> {describe(self.minimal)}, "
                f"{self.non_neutral_before} -> {self.non_neutral_after} non-neutral elements "
                f"({self.rounds} rounds, {self.probes} cases probed, {self.seconds:.1f} s)")

    def to_dict(self) -> dict:
        return {"from": self.original.id, "signature": self.signature.to_dict(), "summary": self.summary(),
                "rounds": self.rounds, "probes": self.probes, "seconds": round(self.seconds, 2),
                "elements": [self.elements_before, self.elements_after],
                "non_neutral": [self.non_neutral_before, self.non_neutral_after]}


def shrink(case: Case, probe: Callable[[list[Case]], dict], *, want: Signature | None = None,
           max_rounds: int = 300, time_limit: float | None = None,
           log: Callable[[str], None] | None = None) -> ShrinkResult:
    """The smallest case found that fails with the signature ``want`` (default: the case's own
    on this EP). ``probe``: list of cases -> {case id: record} (a ``prober.Prober``)."""
    say = log or (lambda _m: None)
    t0 = time.perf_counter()
    probed0 = getattr(probe, "cases", 0)
    start = state_of(case)
    n_before = int(sum(v.size for v in start.arrays.values()))
    nn_before = start.non_neutral()
    recs = probe([start.case])
    got = signature(recs[start.case.id])
    if want is None:
        want = got
    if want is None or got != want:
        raise NotReproduced(f"{case.id}: on this EP the case gives {got.text() if got else recs[start.case.id].verdict}"
                            + (f", not {want.text()}" if want else ", not a failure"))

    def same_signature(cases: list[Case]) -> dict:
        r = probe(cases)
        return {c.id: r[c.id] for c in cases if c.id in r and signature(r[c.id]) == want}

    red = reduce(start, recs[start.case.id], same_signature, rounds=1, max_rounds=max_rounds,
                 deadline=None if time_limit is None else t0 + time_limit)
    best = red.best
    res = ShrinkResult(case, best.case, want, red.witness, red.rounds, getattr(probe, "cases", 0) - probed0,
                       time.perf_counter() - t0, n_before, best.elements(), nn_before, best.non_neutral(), red.steps)
    say(res.summary())
    return res
