"""Wrong answers of the kinds GPU kernels really give, and right answers the judge must accept: the
mutants the bench measures its own judge with (``onnx_dml_bench/mutants.py``).

A :class:`MutantClass` is one bug class (or one legitimate way of computing the answer), with the
document, issue or post-mortem it comes from, and ``make(subject)``: the mutated outputs it gives
for one case (a :class:`Subject`: the case, its inputs, its expected outputs), as (variant, outputs)
pairs, none where the class does not apply to the case. Every operator declares its own classes
(``Operator.mutants``, in its own file); the generic ones here (:data:`GENERIC`) apply to every
operator. A class that needs a re-computation (a window shifted, another divisor, another
reading) calls the operator's reference with a modified case, descriptor or reading, never a
hand-written formula of the answer.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

#: the lane names a mutant is judged as: a lane whose readings are those of any IEEE GPU EP, and the
#: DirectML EP (Direct3D's floating-point rules: float32 denormals may be flushed)
IEEE_LANE = "CUDAExecutionProvider"
DML_LANE = "DmlExecutionProvider"

#: sources of the generic classes
SRC_DISPATCH = ("D3D12_CS_DISPATCH_MAX_THREAD_GROUPS_PER_DIMENSION = 65,535 (d3d12.h; CUDA's grid y and z "
                "dimensions have the same limit): a dispatch split in parts, the last part not run or run on "
                "the wrong range")
SRC_UNWRITTEN = "an output buffer the kernel never wrote: the allocator's zeros (the dispatch skipped, an early return)"
SRC_NAN = ("IEEE 754-2019 9.6 (maximum vs maximumNumber); fmax/fmin drop NaN, a max(a, b) written as a > b ? a : b "
           "drops or keeps NaN by operand order")
SRC_SIGN = "a negated accumulator or a min where a max is due (sign of the answer wrong)"
SRC_HALF = "a divisor counted twice (count doubled), an average over a window counted as twice its size"
SRC_BOUND = "one element wrong by more than the worst error a correct evaluation can have (a race on one element)"
SRC_FLUSH = ("Direct3D 11 floating-point rules: float32 denormals may be flushed to sign-preserved zero on input and "
             "output of arithmetic; float16 and float64 denormals must be preserved; shader model 6.2 "
             "-denorm any|ftz|preserve for float32 only. CUDA and IEEE 754 preserve them")


@dataclass
class Subject:
    """One case as the mutants see it: the case, its inputs and its expected outputs (``ref``,
    computed once for every mutant of the case), with the facts the classes share."""
    case: object
    inputs: dict
    ref: dict
    #: "onnx": the answer of the case's ONNX graph; "dml": the descriptor's (a case no ONNX graph expresses)
    semantics: str = "onnx"
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def op(self):
        return self.case.operator

    def expected(self, case=None, inputs=None) -> dict:
        """The operator's answer for ``case`` (default: this one) on ``inputs`` (default: this one's),
        by the semantics this subject is judged with."""
        c = case or self.case
        xs = inputs if inputs is not None else self.inputs
        return c.operator.expected(c, xs) if self.semantics == "onnx" else c.operator.reference(c, xs)

    def specs(self) -> dict:
        return self.op.compare_specs(self.case)

    def values(self) -> list[str]:
        """The outputs compared as values (not as indices)."""
        return [k for k, s in self.specs().items() if s.kind != "indices" and k in self.ref]

    def indices(self) -> list[str]:
        return [k for k, s in self.specs().items() if s.kind == "indices" and k in self.ref]

    def bound_above(self, name: str) -> np.ndarray | None:
        """How far above the reference an element of output ``name`` may lie under the reference's
        reading (None: compared exactly)."""
        return self._bound(name, 1)

    def _bound(self, name: str, side: int) -> np.ndarray | None:
        """The reference's bound of output ``name`` above (``side`` 1) or below (0) it."""
        if self.specs()[name].kind != "bound":
            return None
        if "bound" not in self._cache:
            self._cache["bound"] = self.op.reference_bound(self.case, self.inputs, self.ref)
        b = self._cache["bound"].get(name)
        if b is None:
            return None
        b = b[side] if isinstance(b, tuple) else b
        return np.broadcast_to(np.asarray(b, dtype=np.float64), np.shape(self.ref[name]))

    def reach_above(self, name: str) -> np.ndarray | None:
        """How far above the reference an element of output ``name`` may lie under any allowed
        reading: the reference's bound, and for each alternative of the same shape its distance from
        the reference plus its own bound (None: compared exactly). A value past it is outside every
        reading the judge allows."""
        return self._reach(name, 1)

    def reach_below(self, name: str) -> np.ndarray | None:
        """How far below the reference an element of output ``name`` may lie under any allowed
        reading (the mirror of :meth:`reach_above`)."""
        return self._reach(name, 0)

    def _reach(self, name: str, side: int) -> np.ndarray | None:
        b = self._bound(name, side)
        if b is None:
            return None
        key = ("reach", name, side)
        if key not in self._cache:
            ref = np.asarray(self.ref[name], dtype=np.float64)
            reach = np.array(b, dtype=np.float64)
            pts = self.points()
            for alt in (self.op.alternatives(self.case, self.inputs, self.ref, pts) if pts else ()):
                out = alt.outputs.get(name)
                if out is None or np.shape(out) != ref.shape:
                    continue
                ab = (alt.bounds or {}).get(name)
                if ab is None:
                    ab = self.op.reference_bound(self.case, self.inputs, alt.outputs).get(name)
                if ab is None:
                    continue
                ab = ab[side] if isinstance(ab, tuple) else ab
                free = (alt.free or {}).get(name)
                if free is not None:                       # any value at all there
                    reach = np.where(np.broadcast_to(free, ref.shape), np.inf, reach)
                with np.errstate(invalid="ignore", over="ignore"):
                    d = np.asarray(out, dtype=np.float64) - ref
                    d = d if side else -d
                    r = np.where(np.isfinite(d), np.maximum(d, 0.0), 0.0) + np.broadcast_to(
                        np.asarray(ab, dtype=np.float64), ref.shape)
                reach = np.maximum(reach, np.where(np.isfinite(r), r, reach))
            self._cache[key] = reach
        return self._cache[key]

    def points(self) -> list[str]:
        """Every open point (precision points included) the case touches."""
        if "points" not in self._cache:
            c, x = self.case, self.inputs
            pts = list(self.op.precision_points(c, x)) + list(self.op.open_points(c, x))
            if self.semantics == "onnx":
                pts += list(self.op.onnx_open_points(c, x))
            self._cache["points"] = pts
        return self._cache["points"]

    def with_outputs(self, **changed) -> dict:
        """The reference's outputs with some replaced."""
        out = dict(self.ref)
        out.update(changed)
        return out


Made = Iterable[tuple[str, dict]]


@dataclass(frozen=True)
class MutantClass:
    """A bug class (``legit`` False: every mutant of it is a wrong answer the judge must reject,
    unless it is proven equal to an allowed answer) or a legitimate way of computing the answer
    (``legit`` True: the judge must accept every one). ``lane``: the EP name it is judged as (the
    readings that depend on the lane apply to that lane). ``source``: the document, issue or
    post-mortem the class comes from."""
    key: str
    source: str
    make: Callable[[Subject], Made] = field(compare=False, repr=False)
    legit: bool = False
    lane: str = IEEE_LANE
    text: str = ""


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------

def is_float(a) -> bool:
    return np.asarray(a).dtype.kind == "f"


def zeroed(a: np.ndarray, index) -> np.ndarray:
    out = np.array(a, copy=True)
    out[index] = 0
    return out


def subnormal(a: np.ndarray) -> np.ndarray:
    """Per element: a non-zero float smaller in magnitude than the type's smallest normal."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    with np.errstate(invalid="ignore"):
        return (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)


def flushed(a: np.ndarray) -> np.ndarray:
    """Denormals flushed to sign-preserved zero."""
    a = np.asarray(a)
    sub = subnormal(a)
    if not sub.any():
        return a
    return np.where(sub, np.copysign(np.zeros((), a.dtype), a), a).astype(a.dtype)


def pick(a: np.ndarray, ok: np.ndarray | None = None) -> int | None:
    """A flat position to mutate: the middle one among those ``ok`` (default: finite values)."""
    a = np.asarray(a)
    if ok is None:
        ok = np.isfinite(a) if a.dtype.kind == "f" else np.ones(a.shape, bool)
    at = np.flatnonzero(ok)
    return int(at[len(at) // 2]) if at.size else None


# ------------------------------------------------------------------------------------------------
# The generic classes
# ------------------------------------------------------------------------------------------------

def _zeros(s: Subject) -> Made:
    yield "", {k: np.zeros_like(v) for k, v in s.ref.items()}


def _tail(s: Subject) -> Made:
    out = {}
    for k, v in s.ref.items():
        flat = np.array(v, copy=True).reshape(-1)
        flat[flat.size - max(1, flat.size // 4):] = 0
        out[k] = flat.reshape(np.shape(v))
    yield "last-quarter", out


def _dropped(axis: int, what: str):
    def make(s: Subject) -> Made:
        ref = next(iter(s.ref.values()))
        if np.ndim(ref) < 3 or np.shape(ref)[axis] < 2:
            return
        idx = [slice(None)] * np.ndim(ref)
        idx[axis] = -1
        yield what, {k: zeroed(v, tuple(idx)) for k, v in s.ref.items()}
    return make


def _nan_produced(s: Subject) -> Made:
    for k in s.values():
        v = s.ref[k]
        at = pick(v) if is_float(v) else None
        if at is not None:
            m = np.array(v, copy=True)
            m.reshape(-1)[at] = np.nan
            yield k, s.with_outputs(**{k: m})


def _nan_dropped(s: Subject) -> Made:
    for k in s.values():
        v = s.ref[k]
        if is_float(v) and np.isnan(v).any():
            yield k, s.with_outputs(**{k: np.where(np.isnan(v), np.zeros((), v.dtype), v)})


def _sign(s: Subject) -> Made:
    for k in s.values():
        v = np.asarray(s.ref[k])
        if v.dtype.kind == "u":
            continue
        if v.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                m = np.where((v != 0) & ~np.isnan(v), -v, v).astype(v.dtype)
        else:
            m = (-v).astype(v.dtype)
        yield k, s.with_outputs(**{k: m})


def _inf_sign(s: Subject) -> Made:
    for k in s.values():
        v = np.asarray(s.ref[k])
        if is_float(v) and np.isinf(v).any():
            yield k, s.with_outputs(**{k: np.where(np.isinf(v), -v, v).astype(v.dtype)})


def _halved(s: Subject) -> Made:
    for k in s.values():
        v = np.asarray(s.ref[k])
        m = (v / np.asarray(2, v.dtype)).astype(v.dtype) if is_float(v) else (v // 2).astype(v.dtype)
        yield k, s.with_outputs(**{k: m})


def _off_by_bound(k_times: float):
    def make(s: Subject) -> Made:
        for k in s.values():
            v = np.asarray(s.ref[k])
            if not is_float(v):
                at = pick(v)
                if at is not None:
                    m = np.array(v, copy=True)
                    flat = m.reshape(-1)
                    flat[at] = flat[at] + 1 if flat[at] != np.iinfo(v.dtype).max else flat[at] - 1
                    yield k, s.with_outputs(**{k: m})
                continue
            b = s.reach_above(k)
            ok = np.isfinite(v) & (np.isfinite(b) if b is not None else True)
            at = pick(v, ok)
            if at is None:
                continue
            new = _moved(v.reshape(-1)[at], b, s.reach_below(k), at, k_times)
            if new is None:                 # no value of the type lies that far either way
                continue
            m = np.array(v, copy=True)
            m.reshape(-1)[at] = new
            yield k, s.with_outputs(**{k: m})
    return make


def _moved(x, above, below, at: int, k_times: float):
    """``x`` (an element of a float output) moved at least ``k_times`` its reach away, upward, or
    downward where upward leaves the type's range (one ULP each way where compared exactly): the
    rounding to the type never brings it nearer than that. None where neither way stays finite."""
    inf = np.asarray(np.inf, x.dtype)
    for direction, reach in ((1, above), (-1, below)):
        step = k_times * float(reach.reshape(-1)[at]) if reach is not None else 0.0
        if not np.isfinite(step):
            continue
        with np.errstate(over="ignore"):
            new = np.asarray(float(x) + direction * step, dtype=x.dtype)
            while np.isfinite(new) and direction * (float(new) - float(x)) < max(step, 0.0) or new == x:
                new = np.nextafter(new, direction * inf)
        if np.isfinite(new):
            return new
    return None


def _flush(kinds: tuple[str, ...]):
    """Denormals flushed on input and output of the arithmetic, for data types ``kinds``."""
    def make(s: Subject) -> Made:
        if s.case.desc.DataType not in kinds:
            return
        inputs = {k: (flushed(v) if is_float(v) and k == "X" else v) for k, v in s.inputs.items()}
        if not any(subnormal(v).any() for v in list(s.inputs.values()) + list(s.ref.values()) if is_float(v)):
            return
        out = s.expected(inputs=inputs) if any(inputs[k] is not s.inputs[k] for k in inputs) else dict(s.ref)
        yield "", {k: (flushed(v) if k in s.values() else v) for k, v in out.items()}
    return make


GENERIC: tuple[MutantClass, ...] = (
    MutantClass("zeros", SRC_UNWRITTEN, _zeros, text="every output left zero"),
    MutantClass("unwritten-tail", SRC_UNWRITTEN, _tail, text="the last quarter of every output left zero"),
    MutantClass("dropped-last-batch", SRC_DISPATCH, _dropped(0, "batch"), text="the last batch (or region) left zero"),
    MutantClass("dropped-last-channel", SRC_DISPATCH, _dropped(1, "channel"), text="the last channel left zero"),
    MutantClass("dropped-last-row", SRC_DISPATCH, _dropped(-2, "row"), text="the last row of every plane left zero"),
    MutantClass("nan-produced", SRC_NAN, _nan_produced, text="one finite element answered NaN"),
    MutantClass("nan-dropped", SRC_NAN, _nan_dropped, text="every NaN of the answer replaced by 0"),
    MutantClass("sign-flipped", SRC_SIGN, _sign, text="every non-zero element negated"),
    MutantClass("infinity-sign-flipped", SRC_SIGN, _inf_sign, text="every infinity of the answer negated"),
    MutantClass("halved", SRC_HALF, _halved, text="every element halved"),
    MutantClass("off-by-2x-bound", SRC_BOUND, _off_by_bound(2.0),
                text="one element off by twice the widest error bound of any allowed reading (by one ULP, or one, where compared exactly)"),
    MutantClass("denormal-flushed", SRC_FLUSH, _flush(("FLOAT32",)), lane=IEEE_LANE,
                text="float32 denormals flushed on an IEEE lane (CUDA): not allowed there"),
    MutantClass("denormal-flushed-f16-f64", SRC_FLUSH, _flush(("FLOAT16", "FLOAT64")), lane=DML_LANE,
                text="float16 / float64 denormals flushed on the DirectML lane: Direct3D keeps them"),
)

#: a float32 flush on the DirectML lane: legitimate where the operator does arithmetic on its values
#: (a sum, a comparison: Direct3D 11 flushes denormals on input and output of min/max too)
D3D_FLUSH = MutantClass("denormal-flushed-d3d", SRC_FLUSH, _flush(("FLOAT32",)), legit=True, lane=DML_LANE,
                        text="float32 denormals flushed on input and output on the DirectML lane: Direct3D allows it")
#: the same flush by an operator that only moves data: Direct3D's loads, stores and moves keep the bits
D3D_FLUSH_MOVE = MutantClass("denormal-flushed-d3d-move", SRC_FLUSH + "; data movement (ld, store, mov) keeps the bits",
                             _flush(("FLOAT32",)), lane=DML_LANE,
                             text="float32 denormals flushed by an operator that only moves data, on the DirectML lane")


def alternatives_class(limit: int = 24) -> MutantClass:
    """The legitimate answers of the open points the case touches: each of the operator's
    ``alternatives`` (at most ``limit``) whose outputs differ from the reference's."""
    def make(s: Subject) -> Made:
        pts = s.points()
        if not pts:
            return
        n = 0
        for alt in s.op.alternatives(s.case, s.inputs, s.ref, pts):
            if n >= limit:
                return
            outs = alt.outputs
            if set(outs) == set(s.ref) and all(np.shape(outs[k]) == np.shape(s.ref[k]) and same_bits(outs[k], s.ref[k])
                                              for k in outs):
                continue
            n += 1
            yield alt.name, dict(outs)
    return MutantClass("allowed-reading", "the open points of the operator's documents (Operator.alternatives)",
                       make, legit=True, text="each other reading an open point of the case allows")


def same_bits(a, b) -> bool:
    """Bit for bit the same array (type, shape and every byte)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def replace_case(case, **desc_changes):
    """The case with descriptor fields changed."""
    return dataclasses.replace(case, desc=case.desc.replace(**desc_changes))
