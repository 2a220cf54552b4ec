"""The judge's power, measured with mutants: from the expected answer of each case of a profile,
wrong answers of the bug classes GPU kernels really have and right answers computed in the other
ways the documents allow (``ops/_mutants.py``: the generic classes; ``Operator.mutants``: each
operator's own), each judged through ``verdict.judge`` (the one verdict path) as the outcome of an
EP with no CPU side.

A bug mutant is *killed* when its verdict is not PASS. One that passes is *equivalent* only where
that is proven: the same bits as the reference (for an output compared within a bound, the same
values: a computed zero of either sign), or the same bits as one of the operator's allowed answers
(``Operator.alternatives``; either sign of a zero where that answer leaves it free), or, element
by element, the bits of the reference or of a concrete evaluation its reading allows
(``Operator.witnesses``: another summation order, a reciprocal multiplied in; a witness the judge
itself does not pass proves nothing); every other
one is a *survivor*, listed with its case, class, largest error against its bound and the reading
that accepted it. A killed mutant proven equivalent is a false FAIL. A legitimate answer must
PASS. The targets (:data:`TARGETS`): at least 99.9 % of the non-equivalent bug mutants of a profile
killed, at least 99.5 % of each operator's, every legitimate answer passing.
"""
from __future__ import annotations

import dataclasses
import html
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from . import heap, machine, registry, verdict
from .compare import NF_ANY, NF_NAN, NF_NEG_INF, NF_POS_INF, nonfinite_allowed
from .ops._mutants import GENERIC, IEEE_LANE, MutantClass, Subject, same_bits
from .ops._sweep import PROFILES as SWEEPS
from .ops._sweep import SIZED_PROFILES
from .ops.base import Operator
from .outcome import Outcome

#: the targets: share of the non-equivalent bug mutants killed (a profile's, each operator's), and
#: share of the legitimate answers passing
TARGETS = {"profile": 0.999, "operator": 0.995, "legit": 1.0}
SCHEMA = "onnx-dml-bench/mutants/1"
#: the profiles whose cases can be mutated
PROFILES = SWEEPS + SIZED_PROFILES


class MutantsError(ValueError):
    """A selection the measure cannot take (an unknown profile or operator)."""


def classes(op) -> tuple[MutantClass, ...]:
    """Every mutant class of operator ``op``: the generic ones, then its own."""
    return GENERIC + tuple(op.mutants())


def select(profile: str, ops=(), max_elements: int | None = None, every: int = 1) -> list:
    """The cases of ``profile`` for operators ``ops`` (all when empty); of a sized profile every
    ``every``-th case of each operator, each tensor within ``max_elements`` elements."""
    try:
        chosen = [registry.get(o) for o in ops] if ops else list(registry.OPERATORS.values())
    except KeyError as e:
        raise MutantsError(f"--op: {e.args[0]}") from None
    out = []
    for op in chosen:
        try:
            cases = op.sized_sweep(profile, max_elements) if profile in SIZED_PROFILES else op.sweep(profile)
        except (KeyError, ValueError) as e:
            raise MutantsError(f"--profile {profile!r}: {e}") from None
        out += cases[::max(1, every)] if profile in SIZED_PROFILES else cases
    return out


# ------------------------------------------------------------------------------------------------
# One case
# ------------------------------------------------------------------------------------------------

def _stats(j) -> dict:
    return {k: {"max_abs": c.max_abs, "bound_ratio": c.bound_ratio, "max_ulp": c.max_ulp, "labels": list(c.labels)}
            for k, c in j.outputs.items()}


def _took(j) -> str:
    took = [lab.split(":", 1)[1] for lab in j.labels if lab.startswith("ep-took:")]
    return took[0] if took else "the reference's reading"


def _unsigned_zeros(a):
    a = np.asarray(a)
    return a + np.zeros((), a.dtype) if a.dtype.kind == "f" else a      # -0.0 + 0.0 is +0.0


def _equivalence(s: Subject, outputs: dict) -> str | None:
    """Why a passing mutant is an allowed answer, proven; None where it is not: the reference's
    bits; the reference's values (outputs compared within a bound: a zero of either sign, as a sum
    gives it in one order or another); or the bits of one of the operator's allowed answers (either
    sign of a zero where that answer leaves it free)."""
    if set(outputs) == set(s.ref) and all(same_bits(outputs[k], s.ref[k]) for k in s.ref):
        return "same-bits"
    bound = {k for k, spec in s.specs().items() if spec.kind == "bound"}
    if set(outputs) == set(s.ref) and all(same_bits(*(_unsigned_zeros(a) if k in bound else a
                                                       for a in (outputs[k], s.ref[k]))) for k in s.ref):
        return "same-values"                 # a computed zero's sign (of a sum) is no value
    pts = s.points()
    for alt in (s.op.alternatives(s.case, s.inputs, s.ref, pts) if pts else ()):
        if set(outputs) != set(alt.outputs):
            continue
        norm = _unsigned_zeros if alt.zero_sign_free else np.asarray
        if all(same_bits(norm(outputs[k]), norm(alt.outputs[k])) for k in outputs):
            return f"bits-of:{alt.name or 'reference'}"
    return _witnessed(s, outputs, bound)


def _element_bits(a, b) -> np.ndarray:
    """Per element: the same bits (any NaN the same as any other)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return np.zeros(a.shape, bool)
    if a.dtype.kind != "f":
        return a == b
    u = np.dtype(f"u{a.dtype.itemsize}")
    return (a.view(u) == b.view(u)) | (np.isnan(a) & np.isnan(b))


def _witnessed(s: Subject, outputs: dict, bound: set) -> str | None:
    """Every element the bits of the reference or of one of the operator's witnesses (concrete
    answers of evaluations its reading allows, ``Operator.witnesses``); the witnesses used, named. A
    witness proves nothing unless the judge itself passes it as a whole answer: an evaluation no
    reading allows is no allowed answer."""
    if set(outputs) != set(s.ref) or any(np.shape(outputs[k]) != np.shape(s.ref[k]) for k in s.ref):
        return None                       # another shape: no witness (of the reference's shape) gives it
    norm = {k: (_unsigned_zeros if k in bound else np.asarray) for k in s.ref}
    got = {k: norm[k](outputs[k]) for k in s.ref}
    ok = {k: _element_bits(got[k], norm[k](s.ref[k])) for k in s.ref}
    if all(m.all() for m in ok.values()) or _out_of_reach(s, got, ok, bound):
        return None
    used: list[str] = []
    for w in s.op.witnesses_for(s.case, s.inputs, s.ref, outputs):
        gain = {k: _element_bits(got[k], norm[k](w.outputs[k])) & ~ok[k] for k in s.ref if k in w.outputs}
        if not any(m.any() for m in gain.values()) or not _allowed(s, w):
            continue
        used.append(w.name)
        for k, m in gain.items():
            ok[k] |= m
        if all(m.all() for m in ok.values()):
            return f"witnessed:{'+'.join(used)}"
    return None


def _out_of_reach(s: Subject, got: dict, ok: dict, bound: set) -> bool:
    """Is some element of ``got`` (where the reference is finite) outside everything an allowed
    reading reaches: a finite one farther from the reference than ``Subject.reach_above`` /
    ``reach_below``, a non-finite one that no reading answers or allows there? No witness the judge
    passes can give it then: the witnesses need not be computed."""
    for k in bound:
        above, below = s.reach_above(k), s.reach_below(k)
        if above is None or below is None:
            continue
        g, r = (np.asarray(a, dtype=np.float64) for a in (got[k], s.ref[k]))
        todo = np.isfinite(r) & ~ok[k]
        with np.errstate(invalid="ignore", over="ignore"):
            far = todo & np.isfinite(g) & ((g - r > above) | (r - g > below))
        odd = todo & ~np.isfinite(g)
        if far.any() or (odd.any() and not nonfinite_allowed(_nonfinite_reach(s, k), g)[odd].all()):
            return True
    return False


def _nonfinite_reach(s: Subject, k: str) -> np.ndarray:
    """Per element of output ``k``, the non-finite answers (``compare`` NF_* bits) some allowed
    reading gives or allows there: its own non-finite values and its ``nonfinite_ok``."""
    key = ("nonfinite-reach", k)
    if key not in s._cache:
        bits = np.zeros(np.shape(s.ref[k]), np.uint8)
        pts = s.points()
        for alt in (s.op.alternatives(s.case, s.inputs, s.ref, pts) if pts else ()):
            out = alt.outputs.get(k)
            if out is None or np.shape(out) != bits.shape:
                continue
            a = np.asarray(out)
            if a.dtype.kind == "f":
                bits |= (np.where(np.isposinf(a), NF_POS_INF, 0) | np.where(np.isneginf(a), NF_NEG_INF, 0)
                         | np.where(np.isnan(a), NF_NAN, 0)).astype(np.uint8)
            extra = (alt.nonfinite_ok or {}).get(k)
            if extra is not None:
                e = np.asarray(extra)
                bits |= np.broadcast_to(np.where(e, NF_ANY, 0) if e.dtype == bool else e, bits.shape).astype(np.uint8)
            free = (alt.free or {}).get(k)
            if free is not None:
                bits |= np.where(np.broadcast_to(free, bits.shape), NF_ANY, 0).astype(np.uint8)
        s._cache[key] = bits
    return s._cache[key]


def _allowed(s: Subject, w) -> bool:
    """Does the judge pass witness ``w`` of ``s``, as a whole answer on an IEEE lane (once per
    witness and case)?"""
    key = ("witness-passes", w.name)
    if key not in s._cache:
        outs = {k: w.outputs.get(k, v) for k, v in s.ref.items()}
        j = verdict.judge(s.case, s.inputs, Outcome(True, "done", outputs=outs), None, None, ep_name=IEEE_LANE,
                          ep_is_cpu=False, ref=s.ref, semantics=s.semantics)
        s._cache[key] = j.verdict == "PASS"
    return s._cache[key]


class _Replay:
    """An iterable over a generator's items that computes each item once, however often it is
    iterated (an operator's alternatives, asked for by every mutant of a case)."""

    def __init__(self, items):
        self._it = iter(items)
        self._seen: list = []

    def __iter__(self):
        k = 0
        while True:
            if k < len(self._seen):
                yield self._seen[k]
            else:
                try:
                    item = next(self._it)
                except StopIteration:
                    return
                self._seen.append(item)
                yield item
            k += 1


class _Memo:
    """The operator of one case, its answers that depend on nothing but the case, its inputs and its
    reference (bounds, open points, rules, alternatives) computed once for all the mutants of the
    case; everything else is the operator's own."""

    def __init__(self, op, inputs: dict):
        self._op, self._inputs, self._ref, self._got = op, inputs, None, {}

    def __getattr__(self, name):
        return getattr(self._op, name)

    def __repr__(self) -> str:
        return repr(self._op)

    def _once(self, key, fn):
        if key not in self._got:
            self._got[key] = fn()
        return self._got[key]

    def bind(self, ref: dict) -> None:
        self._ref = ref

    def reference_bound(self, case, inputs, ref):
        if inputs is not self._inputs or ref is not self._ref:
            return self._op.reference_bound(case, inputs, ref)
        return self._once(("bound", case), lambda: self._op.reference_bound(case, inputs, ref))

    def reference_bound_for(self, case, inputs, ref, got):
        return self.reference_bound(case, inputs, ref)      # whole, once for every mutant of the case

    def alternatives(self, case, inputs, ref, points):
        if inputs is not self._inputs or ref is not self._ref:
            return self._op.alternatives(case, inputs, ref, points)
        return self._once(("alt", case, tuple(points)), lambda: _Replay(self._op.alternatives(case, inputs, ref, points)))

    def witnesses(self, case, inputs, ref):
        if inputs is not self._inputs or ref is not self._ref:
            return self._op.witnesses(case, inputs, ref)
        return self._once(("wit", case), lambda: _Replay(self._op.witnesses(case, inputs, ref)))

    def witnesses_for(self, case, inputs, ref, got):
        if type(self._op).witnesses_for is Operator.witnesses_for:     # every witness: computed once
            return self.witnesses(case, inputs, ref)
        return list(self._op.witnesses_for(case, inputs, ref, got))

    def _points(self, name):
        def ask(case, inputs):
            fn = getattr(self._op, name)
            return fn(case, inputs) if inputs is not self._inputs else self._once((name, case), lambda: fn(case, inputs))
        return ask

    def __getattribute__(self, name):
        if name in ("open_points", "precision_points", "onnx_open_points", "rules"):
            return object.__getattribute__(self, "_points")(name)
        return object.__getattribute__(self, name)


def judge_case(case, profile: str) -> list[dict]:
    """Every mutant of ``case`` judged: one row each (and one row per class that failed to make
    its mutants, ``error``)."""
    op = case.operator
    base = {"profile": profile, "op": op.key, "case": case.id, "dtype": case.dtype}
    semantics = "onnx" if op.expressible(case) is None else "dml"
    try:
        inputs = case.inputs()
        problem = op.input_problem(case, inputs)
        if problem:
            return [{**base, "class": "", "skipped": f"invalid input data: {problem}"}]
        memo = _Memo(op, inputs)
        case = dataclasses.replace(case, operator=memo)
        subject = Subject(case, inputs, {}, semantics)
        subject.ref = subject.expected()
        memo.bind(subject.ref)
    except Exception as e:  # noqa: BLE001 - a case the reference cannot answer is reported, not judged
        return [{**base, "class": "", "skipped": f"reference failed: {type(e).__name__}: {e}"}]
    rows = []
    for cls in classes(op):
        try:
            made = list(cls.make(subject))
        except Exception as e:  # noqa: BLE001 - a class that cannot make its mutant is the measure's failure
            rows.append({**base, "class": cls.key, "legit": cls.legit, "error": f"{type(e).__name__}: {e}"})
            continue
        for variant, outputs in made:
            j = verdict.judge(case, inputs, Outcome(True, "done", outputs=outputs), None, None, ep_name=cls.lane,
                              ep_is_cpu=False, ref=subject.ref, semantics=semantics)
            row = {**base, "class": cls.key, "variant": variant, "legit": cls.legit, "lane": cls.lane,
                   "verdict": j.verdict, "passed": j.verdict == "PASS"}
            if cls.legit:
                if not row["passed"]:
                    row["reason"] = j.reason
            elif row["passed"]:
                row["equivalent"] = _equivalence(subject, outputs)
                if row["equivalent"] is None:
                    row["took"] = _took(j)
                    row["stats"] = _stats(j)
            else:
                eq = _equivalence(subject, outputs)
                if eq:                                     # killed although an allowed answer: a false FAIL
                    row["equivalent"] = eq
                    row["reason"] = j.reason
            rows.append(row)
    return rows


def _chunk(args) -> list[dict]:
    cases, profile = args
    out = []
    for c in cases:
        out += judge_case(c, profile)
    return out


def measure(cases: list, profile: str, jobs: int = 1, progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """The rows of every mutant of ``cases`` (one process, or ``jobs`` worker processes)."""
    rows: list[dict] = []
    if jobs <= 1 or len(cases) < 2:
        for i, c in enumerate(cases):
            rows += judge_case(c, profile)
            if progress:
                progress(i + 1, len(cases))
        return rows
    # small chunks, interleaved: the large cases of a sized profile spread over the workers
    k = min(len(cases), 8 * jobs)
    chunks = [cases[i::k] for i in range(k)]
    done = 0
    with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_setup, initargs=(jobs,)) as pool:
        for part, got in zip(chunks, pool.map(_chunk, [(ch, profile) for ch in chunks])):
            rows += got
            done += len(part)
            if progress:
                progress(done, len(cases))
    return rows


def _worker_setup(jobs: int) -> None:
    """A worker process of :func:`measure`, as a run's workers are: it keeps the memory it frees
    (``heap``) and its reference takes its share of the cores (``machine.share_cores``)."""
    heap.keep_freed_memory(heap.share(jobs))
    machine.share_cores(jobs)


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------

def _rate(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def _tally(rows: list[dict]) -> dict:
    bug = [r for r in rows if "passed" in r and not r["legit"]]
    eq = [r for r in bug if r.get("equivalent")]
    killed = [r for r in bug if not r["passed"] and not r.get("equivalent")]
    legit = [r for r in rows if "passed" in r and r["legit"]]
    return {"bug": len(bug), "equivalent": len(eq), "killed": len(killed),
            "survived": len(bug) - len(eq) - len(killed),
            "raw_rate": _rate(sum(not r["passed"] for r in bug), len(bug)), "rate": _rate(len(killed), len(bug) - len(eq)),
            "legit": len(legit), "legit_passed": sum(r["passed"] for r in legit),
            "legit_rate": _rate(sum(r["passed"] for r in legit), len(legit))}


def summarise(rows: list[dict], profiles: list[str], seconds: float | None = None) -> dict:
    """The figures of a measure: per profile overall, per operator and per operator x class; the
    survivors, the legitimate answers that failed, the classes that could not make their mutants,
    the cases not judged; whether the targets hold."""
    out = {"schema": SCHEMA, "targets": TARGETS, "profiles": {}, "classes": {}}
    for op in registry.OPERATORS.values():
        for cls in classes(op):
            out["classes"][cls.key] = {"legit": cls.legit, "lane": cls.lane, "source": cls.source, "text": cls.text}
    for p in profiles:
        mine = [r for r in rows if r["profile"] == p]
        ops = sorted({r["op"] for r in mine}, key=lambda k: list(registry.OPERATORS).index(k))
        per_op = {o: _tally([r for r in mine if r["op"] == o]) for o in ops}
        per_class = {o: {c: _tally([r for r in mine if r["op"] == o and r["class"] == c])
                         for c in dict.fromkeys(r["class"] for r in mine if r["op"] == o and r["class"])}
                     for o in ops}
        out["profiles"][p] = {
            "cases": len({r["case"] for r in mine}),
            "overall": _tally(mine), "operators": per_op, "classes": per_class,
            "survivors": [r for r in mine if "passed" in r and not r["legit"] and r["passed"] and not r.get("equivalent")],
            "false_fails": [r for r in mine if "passed" in r and not r["passed"] and (r["legit"] or r.get("equivalent"))],
            "errors": [r for r in mine if "error" in r],
            "skipped": [r for r in mine if "skipped" in r],
        }
    out["misses"] = misses(out)
    out["seconds"] = seconds
    return out


def misses(summary: dict) -> dict[str, list[str]]:
    """What misses the targets: ``kill`` (a kill rate below its target), ``legit`` (a legitimate or
    proven-equivalent answer not passing, a class that could not make its mutants)."""
    kill, legit = [], []
    t = summary["targets"]
    for p, s in summary["profiles"].items():
        rate = s["overall"]["rate"]
        if rate is not None and rate < t["profile"]:
            kill.append(f"{p}: {rate:.4%} of the non-equivalent bug mutants killed (target {t['profile']:.1%})")
        for o, v in s["operators"].items():
            if v["rate"] is not None and v["rate"] < t["operator"]:
                kill.append(f"{p} {o}: {v['rate']:.4%} killed (target {t['operator']:.1%})")
        for r in s["false_fails"]:
            legit.append(f"{p} {r['case']} {r['class']}{'/' + r['variant'] if r.get('variant') else ''}: "
                         f"{r['verdict']} {r.get('reason', '')}"[:400])
        for r in s["errors"]:
            legit.append(f"{p} {r['case']} {r['class']}: could not make its mutants: {r['error']}"[:400])
    return {"kill": kill, "legit": legit}


def exit_code(summary: dict, require: bool) -> int:
    """0 when the targets hold; 1 when a legitimate answer fails (or a class cannot make its
    mutants), and, with ``require``, when a kill rate is below its target."""
    m = summary["misses"]
    return 1 if m["legit"] or (require and m["kill"]) else 0


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f} %"


def _survivor_line(r: dict) -> str:
    parts = []
    for k, st in (r.get("stats") or {}).items():
        q = f"{k}: max abs {st['max_abs']:.3g}" if st.get("max_abs") is not None else f"{k}:"
        if st.get("bound_ratio") is not None:
            q += f", {st['bound_ratio']:.3g}x its bound"
        parts.append(q)
    what = f"{r['class']}{'/' + r['variant'] if r.get('variant') else ''}"
    return f"{r['case']} {what} on {r['lane']}: PASS, took {r.get('took')}; {'; '.join(parts)}"


def lines(summary: dict, survivors: int = 40) -> list[str]:
    """The figures as text lines: per profile overall, per operator, per operator x class; the
    first ``survivors`` survivors; what misses the targets."""
    out = []
    for p, s in summary["profiles"].items():
        o = s["overall"]
        out.append(f"profile {p}: {s['cases']} cases, {o['bug']} bug mutants ({o['equivalent']} proven equivalent), "
                   f"killed {pct(o['raw_rate'])} raw, {pct(o['rate'])} of the non-equivalent; legitimate answers "
                   f"{o['legit_passed']}/{o['legit']} pass")
        for op, v in s["operators"].items():
            out.append(f"  {op:18} killed {pct(v['rate']):>9} ({v['killed']}/{v['bug'] - v['equivalent']}, "
                       f"raw {pct(v['raw_rate'])}), legitimate {v['legit_passed']}/{v['legit']}")
            for c, t in s["classes"][op].items():
                if t["legit"]:
                    out.append(f"    {c:28} legitimate {t['legit_passed']}/{t['legit']} pass")
                elif t["bug"]:
                    out.append(f"    {c:28} killed {pct(t['rate']):>9} ({t['killed']}/{t['bug'] - t['equivalent']}, "
                               f"{t['equivalent']} equivalent), survived {t['survived']}")
        surv = s["survivors"]
        if surv:
            out.append(f"  {len(surv)} survivors" + (f" (first {survivors})" if len(surv) > survivors else "") + ":")
            out += [f"    {_survivor_line(r)}" for r in surv[:survivors]]
        if s["skipped"]:
            out.append(f"  {len(s['skipped'])} cases not judged (first: {s['skipped'][0]['case']}: {s['skipped'][0]['skipped']})")
    m = summary["misses"]
    for k in m["legit"][:20]:
        out.append(f"FAIL (legitimate answer): {k}")
    for k in m["kill"]:
        out.append(f"below target: {k}")
    return out


def write(summary: dict, out: Path) -> tuple[Path, Path]:
    """``mutants.json`` (the summary, every survivor and failure) and ``mutants.html`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    js, page = out / "mutants.json", out / "mutants.html"
    js.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    page.write_text(render(summary), encoding="utf-8")
    return js, page


def render(summary: dict) -> str:
    """The report page: per profile the kill rates per operator x class, the survivors with why,
    the legitimate answers that failed, and every class with its source."""
    e = html.escape
    h = ["<!doctype html><html><head><meta charset='utf-8'><title>Mutants: the judge's power</title>",
         "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,th:first-child,"
         "td.l{text-align:left}.bad{background:#fdd}.ok{background:#dfd}</style></head><body>",
         "<h1>Mutants: the judge's power</h1>",
         f"<p>Targets: {TARGETS['profile']:.1%} of a profile's non-equivalent bug mutants killed, "
         f"{TARGETS['operator']:.1%} of each operator's, every legitimate answer passing.</p>"]
    for p, s in summary["profiles"].items():
        o = s["overall"]
        h.append(f"<h2>Profile {e(p)}</h2><p>{s['cases']} cases; {o['bug']} bug mutants, {o['equivalent']} proven "
                 f"equivalent; killed {pct(o['raw_rate'])} raw, <b>{pct(o['rate'])}</b> of the non-equivalent; "
                 f"legitimate answers {o['legit_passed']}/{o['legit']} pass.</p>")
        h.append("<table><tr><th>operator / class</th><th>bug</th><th>equivalent</th><th>killed</th><th>survived</th>"
                 "<th>kill rate</th><th>raw</th><th>legitimate</th><th>passing</th></tr>")
        for op, v in s["operators"].items():
            bad = v["rate"] is not None and v["rate"] < TARGETS["operator"]
            h.append(f"<tr class='{'bad' if bad else 'ok'}'><th>{e(op)}</th><td>{v['bug']}</td><td>{v['equivalent']}</td>"
                     f"<td>{v['killed']}</td><td>{v['survived']}</td><td>{pct(v['rate'])}</td><td>{pct(v['raw_rate'])}</td>"
                     f"<td>{v['legit']}</td><td>{v['legit_passed']}</td></tr>")
            for c, t in s["classes"][op].items():
                bad = t["survived"] or t["legit_passed"] < t["legit"]
                h.append(f"<tr{' class=bad' if bad else ''}><td class=l>&nbsp;&nbsp;{e(c)}</td><td>{t['bug']}</td>"
                         f"<td>{t['equivalent']}</td><td>{t['killed']}</td><td>{t['survived']}</td><td>{pct(t['rate'])}</td>"
                         f"<td>{pct(t['raw_rate'])}</td><td>{t['legit']}</td><td>{t['legit_passed']}</td></tr>")
        h.append("</table>")
        if s["survivors"]:
            h.append(f"<h3>{len(s['survivors'])} surviving bug mutants</h3><ul>")
            h += [f"<li><code>{e(_survivor_line(r))}</code></li>" for r in s["survivors"]]
            h.append("</ul>")
        if s["false_fails"] or s["errors"]:
            h.append("<h3>Legitimate answers not passing, classes that could not make their mutants</h3><ul>")
            h += [f"<li><code>{e(str(r))}</code></li>" for r in s["false_fails"] + s["errors"]]
            h.append("</ul>")
    h.append("<h2>Classes</h2><table><tr><th>class</th><th>kind</th><th>lane</th><th>what</th><th>source</th></tr>")
    for k, c in summary["classes"].items():
        h.append(f"<tr><td class=l>{e(k)}</td><td class=l>{'legitimate' if c['legit'] else 'bug'}</td>"
                 f"<td class=l>{e(c['lane'])}</td><td class=l>{e(c['text'])}</td><td class=l>{e(c['source'])}</td></tr>")
    h.append("</table></body></html>")
    return "\n".join(h)


@dataclass
class Request:
    profiles: list[str]
    ops: list[str]
    max_elements: int | None = None
    every: int = 1
    jobs: int = 1


def run(req: Request, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Select, judge every mutant, and summarise."""
    t0 = time.perf_counter()
    rows = []
    for p in req.profiles:
        cases = select(p, req.ops, req.max_elements, req.every)
        rows += measure(cases, p, req.jobs, (lambda i, n, p=p: progress(p, i, n)) if progress else None)
    return summarise(rows, req.profiles, round(time.perf_counter() - t0, 1))


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 2))
