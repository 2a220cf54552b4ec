"""Fuzzing: sample valid cases, run them in batches on an EP, group the failures by signature and
shrink one case per new signature.

Sampling follows each operator's own rules, in two steps:

- the *shape* of a descriptor (which fields, their kinds, tuple lengths, the data types and
  enumerations an operator takes, the ranges its sweep uses) is read from the operator's sweep
  (``Operator.sweep("full")``): a template is drawn from it and every field is re-drawn within the
  ranges seen there (integers and integer tuples element by element, booleans, enumerations and
  floats from the values the sweep names; ONNX-side options from ``Operator.variant_keys``, those
  with a fixed set of values (a pooling graph's explicit ``pads`` are left to the descriptor);
  opsets from ``Operator.opsets``; input families from ``Operator.families``), and the operator
  brings the fields its ONNX-side options decide in line (``Operator.normalize``: auto_pad SAME
  and VALID fix the pads as ONNX defines them);
- the input's size is then grown: a total number of elements is drawn log-uniformly between the
  drawn input's and the size limit (``--max-elements``, default ``ops.base.MAX_TENSOR_ELEMENTS``),
  and the input's axes are multiplied by integer factors that reach it (split at random among the
  axes: batch, channels and spatial sizes all grow, and a block size that divided an axis still
  does), so that samples span every order of magnitude up to the limit, where GPU kernels split
  and overflow their work, not only the sweep's few thousand elements;
- the operator's admission check decides (``Operator.admit`` up to the data: ``validate``,
  ``check_variant``, the size limit and ``expressible`` at its opset), else the sample is counted
  as rejected and not run. A round holds at most ``batch_bytes`` of the samples' estimated memory
  (``Operator.memory_bytes``), as a run's batch does.

Everything comes from one ``numpy.random.Generator`` seeded with ``--seed``: the same seed gives
the same samples in the same order (a time budget only decides how far into that sequence a run
gets; ``max_cases`` fixes it).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .. import registry
from ..casefile import dump
from ..cases import Case, make_variant
from ..outdir import RESULTS, shrunk_path, write_text
from ..ops.base import MAX_TENSOR_ELEMENTS
from ..plan import PlanError, RunPlan, check_memory
from ..record import Verdict
from ..report import write_all
from ..results import ResultWriter, read
from ..signature import Signature, signature
from .prober import Prober
from .shrink import shrink
from .triage import write_case


class FuzzError(ValueError):
    """A problem with the command's arguments (one line for a person)."""


def parse_budget(text: str) -> float:
    """'90s', '10m', '1h', '1.5m' or a plain number of seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*", str(text))
    if not m:
        raise FuzzError(f"--budget must be like 90s, 10m or 1h, got {text!r}")
    return float(m.group(1)) * {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, None: 1}[m.group(2)]


# ----------------------------------------------------------------------------------------------
# Strategies derived from each operator
# ----------------------------------------------------------------------------------------------

@dataclass
class FieldRange:
    kind: str                          # int | ints | bool | float | choice
    lo: list = field(default_factory=list)
    hi: list = field(default_factory=list)
    choices: list = field(default_factory=list)


@dataclass
class Strategy:
    """How to draw a descriptor of one operator: per template shape (rank), the range of every field.
    A draw starts from a descriptor of the sweep of that shape and draws one to three of its fields
    anew: the fields a descriptor's validity couples (RoiAlign's two scales, its sample bounds) stay
    coupled in the rest."""
    op: object
    templates: list                    # descriptors of the sweep, one per distinct shape of fields
    ranges: dict                       # (shape key, field name) -> FieldRange
    donors: dict = field(default_factory=dict)   # shape key -> the sweep's descriptors of that shape

    def draw(self, rng: np.random.Generator, max_elements: int | None = None) -> Case:
        """A sample; with ``max_elements``, its input grown to a log-uniform size up to it (:func:`grow`)."""
        op = self.op
        t = self.templates[int(rng.integers(len(self.templates)))]
        key = _shape_key(t)
        pool = self.donors.get(key) or [t]
        t = pool[int(rng.integers(len(pool)))]
        names = [f.name for f in dataclasses.fields(t) if (key, f.name) in self.ranges]
        picked = set(rng.choice(names, size=min(len(names), 1 + int(rng.integers(3))), replace=False)) if names else set()
        changes = {}
        for f in dataclasses.fields(t):
            r = self.ranges.get((key, f.name))
            if r is None or f.name not in picked:
                continue
            v = getattr(t, f.name)
            if r.kind == "ints":
                changes[f.name] = tuple(int(rng.integers(lo, hi + 1)) for lo, hi in zip(r.lo, r.hi))
            elif r.kind == "int":
                changes[f.name] = int(rng.integers(r.lo[0], r.hi[0] + 1))
            elif r.kind == "bool":
                changes[f.name] = bool(rng.integers(2))
            elif r.kind in ("choice", "float"):
                changes[f.name] = r.choices[int(rng.integers(len(r.choices)))]
            else:
                changes[f.name] = v
        desc = t.replace(**changes)
        if max_elements is not None:
            desc = grow(desc, rng, max_elements)
        variant = {}
        for k, values in sorted(op.variant_keys.items()):
            if values is None:
                continue        # an option the operator checks itself (explicit pads): left to the descriptor
            pick = int(rng.integers(len(values) + 1))
            if pick < len(values):
                variant[k] = values[pick]
        opset = int(op.opsets[int(rng.integers(len(op.opsets)))]) if op.opsets else op.default_opset
        fams = op.families(desc.DataType)
        family = fams[int(rng.integers(len(fams)))]
        return op.normalize(Case(op, desc, opset, make_variant(**variant), family, int(rng.integers(2**31 - 1))))


def grow(desc, rng: np.random.Generator, max_elements: int):
    """``desc`` with its InputSizes grown to a total drawn log-uniformly between its own total and
    ``max_elements``: each axis multiplied by an integer factor, the factors' logarithms a random
    split (Dirichlet) of the growth's."""
    sizes = tuple(int(v) for v in desc.InputSizes)
    total = math.prod(sizes)
    if total >= max_elements or not sizes:
        return desc
    target = math.exp(rng.uniform(math.log(total), math.log(max_elements)))
    weights = rng.exponential(size=len(sizes))
    weights = weights / weights.sum()
    growth = target / total
    factors = [max(1, int(growth ** w)) for w in weights]
    return desc.replace(InputSizes=tuple(v * f for v, f in zip(sizes, factors)))


def _shape_key(desc) -> tuple:
    return tuple((f.name, len(v)) if isinstance(v := getattr(desc, f.name), tuple) else f.name
                 for f in dataclasses.fields(desc))


_FIXED = ("DimensionCount",)


def strategy_for(op) -> Strategy:
    """The operator's sampling strategy, read from its full sweep."""
    cases = op.sweep("full")
    templates: dict = {}
    ranges: dict = {}
    by_shape: dict = {}
    for c in cases:
        key = _shape_key(c.desc)
        templates.setdefault(key, c.desc)
        by_shape.setdefault(key, []).append(c.desc)
    for key, descs in by_shape.items():
        for f in dataclasses.fields(descs[0]):
            if f.name in _FIXED:
                continue
            vals = [getattr(d, f.name) for d in descs]
            v0 = vals[0]
            if isinstance(v0, bool):
                ranges[(key, f.name)] = FieldRange("bool")
            elif isinstance(v0, int):
                lo, hi = min(vals), max(vals)
                ranges[(key, f.name)] = FieldRange("int", [0 if lo == 0 else 1], [max(hi, lo) + 1])
            elif isinstance(v0, float):
                ranges[(key, f.name)] = FieldRange("float", choices=sorted(set(vals) | {0.5, 1.0, 2.0}))
            elif isinstance(v0, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v0):
                n = len(v0)
                los = [min(v[i] for v in vals) for i in range(n)]
                his = [max(v[i] for v in vals) for i in range(n)]
                ranges[(key, f.name)] = FieldRange("ints", [0 if lo == 0 else 1 for lo in los], [h + 1 for h in his])
            else:
                choices = sorted({v for v in vals}, key=lambda x: (x is None, str(x)))
                if len(choices) > 1:
                    ranges[(key, f.name)] = FieldRange("choice", choices=choices)
    return Strategy(op, list(templates.values()), ranges, by_shape)


def valid(case: Case, max_elements: int | None = None) -> bool:
    """The sample passes the operator's admission check up to its data (with ``max_elements``:
    every tensor within it)."""
    try:
        return case.operator.admit(case, size=max_elements is not None, max_elements=max_elements, data=False).ok
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError):
        return False


def samples(strategies: list[Strategy], rng: np.random.Generator, n: int, stats: Counter,
            max_elements: int | None = None, max_bytes: int | None = None) -> list[Case]:
    """``n`` valid cases (rejected draws are counted in ``stats['rejected']``); with
    ``max_elements``, their inputs grown log-uniformly up to it (:func:`grow`); with ``max_bytes``,
    fewer where their estimated memory (``Operator.memory_bytes``) would pass it (at least one)."""
    out = []
    tries = 0
    held = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        s = strategies[int(rng.integers(len(strategies)))]
        try:
            c = s.draw(rng, max_elements)
        except Exception:  # noqa: BLE001 - a draw the descriptor class refuses outright
            stats["rejected"] += 1
            continue
        if valid(c, max_elements):
            out.append(c)
            stats["sampled"] += 1
            held += c.operator.memory_bytes(c.desc)
            if max_bytes is not None and held >= max_bytes:
                break
        else:
            stats["rejected"] += 1
    return out


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------

@dataclass
class FuzzResult:
    seed: int
    ep: str
    cases: int = 0
    rejected: int = 0
    seconds: float = 0.0
    signatures: dict = field(default_factory=dict)       # Signature -> {"count", "first": case id, "new"}
    shrunk: dict = field(default_factory=dict)           # Signature -> (ShrinkResult | None, path | reason)
    case_ids: list = field(default_factory=list)         # every case run, in order (determinism checks)

    def new(self) -> list[Signature]:
        return [s for s, d in self.signatures.items() if d["new"]]

    def summary(self) -> str:
        mins = self.seconds / 60
        return (f"{len(self.new())} new signature{'s' if len(self.new()) != 1 else ''} "
                f"({len(self.signatures)} in all) in {mins:.1f} min, {self.cases:,} cases "
                f"({self.rejected:,} samples rejected by the operators' rules), seed {self.seed}, {self.ep}")


def baseline_signatures(path: Path | None) -> set:
    if path is None:
        return set()
    return {s for s in (signature(r) for r in read(path).records) if s is not None}


def fuzz(probe, *, seed: int = 0, budget_s: float | None = 600.0, max_cases: int | None = None,
         ops: list[str] | None = None, baseline: set | None = None, batch_size: int = 256,
         shrink_share: float = 0.3, max_shrinks: int | None = None, on_records: Callable | None = None,
         log: Callable[[str], None] | None = None, max_elements: int = MAX_TENSOR_ELEMENTS,
         batch_bytes: int = 256 << 20) -> FuzzResult:
    """Sample, run, group, shrink. ``probe``: a :class:`prober.Prober` (its EP runs everything).
    Samples' inputs grow log-uniformly up to ``max_elements``; a round holds at most ``batch_size``
    samples and ``batch_bytes`` of their estimated memory. Stops sampling at ``max_cases`` or after
    ``(1 - shrink_share) * budget_s``; the rest of the budget goes to shrinking one case per new
    signature."""
    say = log or (lambda _m: None)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    keys = ops or registry.names()
    strategies = [strategy_for(registry.get(k)) for k in keys]
    stats: Counter = Counter()
    baseline = baseline or set()
    res = FuzzResult(seed=seed, ep=getattr(getattr(probe, "lane", None), "ep_name", "") or "")
    examples: dict = {}
    sample_until = None if budget_s is None else t0 + budget_s * (1 - shrink_share)
    last_note = t0
    while True:
        if max_cases is not None and res.cases >= max_cases:
            break
        if sample_until is not None and time.perf_counter() >= sample_until:
            break
        n = batch_size if max_cases is None else min(batch_size, max_cases - res.cases)
        batch = samples(strategies, rng, n, stats, max_elements, batch_bytes)
        if not batch:
            break
        recs = probe(batch)
        res.cases += len(batch)
        res.case_ids += [c.id for c in batch]
        failing = []
        for c in batch:
            r = recs.get(c.id)
            if r is None:
                continue
            s = signature(r)
            # an EP that did not take a case did not answer wrongly: not grouped (the signature
            # would hold no more than the verdict; the run's results keep the record)
            if s is None or s.verdict in Verdict.NOT_TAKEN:
                continue
            failing.append(r)
            d = res.signatures.get(s)
            if d is None:
                res.signatures[s] = {"count": 1, "first": c.id, "new": s not in baseline}
                examples[s] = c
                if s not in baseline:
                    say(f"new signature: {s.text()} ({c.id})")
            else:
                d["count"] += 1
                if _size(c) < _size(examples[s]):
                    examples[s] = c
        if on_records and failing:
            on_records(failing)
        if time.perf_counter() - last_note >= 30:
            last_note = time.perf_counter()
            say(f"{res.cases:,} cases in {last_note - t0:.0f} s, {len(res.signatures)} signatures "
                f"({len(res.new())} new)")
    res.rejected = stats["rejected"]
    new = res.new()[:max_shrinks] if max_shrinks is not None else res.new()
    for i, s in enumerate(new):
        left = None if budget_s is None else max(2.0, (t0 + budget_s - time.perf_counter()) / (len(new) - i))
        try:
            sr = shrink(examples[s], probe, want=s, time_limit=left)
            res.shrunk[s] = (sr, None)
            say(f"shrank {s.text()}: {sr.summary()}")
        except Exception as e:  # noqa: BLE001 - a flaky or non-reproducing signature is reported, not fatal
            res.shrunk[s] = (None, f"{type(e).__name__}: {e}")
    res.seconds = time.perf_counter() - t0
    return res


def _size(c: Case) -> int:
    return int(np.prod(c.desc.InputSizes))


def write(res: FuzzResult, out: Path) -> dict:
    """out/fuzz.json, out/shrunk/<id of the case shrunk>.json per shrunk signature, out/cases.json
    (every minimal case, for `run --cases`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    minimal, rows = [], []
    for s, d in res.signatures.items():
        sr, why = res.shrunk.get(s, (None, None))
        row = {"signature": s.to_dict(), "text": s.text(), "count": d["count"], "first": d["first"], "new": d["new"]}
        if sr is not None:
            # named after the case that was shrunk (a record of results.jsonl): the report links it
            path = write_case(sr, shrunk_path(out / RESULTS, sr.original.id))
            row.update({"shrunk": str(path.relative_to(out)), "minimal": sr.minimal.id, "summary": sr.summary()})
            minimal.append(sr.minimal)
        elif why:
            row["shrink_failed"] = why
        rows.append(row)
    if minimal:
        dump(minimal, out / "cases.json")
    doc = {"summary": res.summary(), "seed": res.seed, "ep": res.ep, "cases": res.cases, "rejected": res.rejected,
           "seconds": round(res.seconds, 1), "signatures": rows}
    write_text(out / "fuzz.json", json.dumps(doc, indent=1) + "\n")
    return doc


def fuzz_command(ep: str, ep_options: dict, budget: str, seed: int, ops: list[str], baseline: Path | None,
                 out: Path, batch_size: int, say: Callable[[str], None], max_cases: int | None = None,
                 max_elements: int | None = None) -> str:
    """The `fuzz` command: results.jsonl (the failing records, with the environment), fuzz.json (signatures),
    shrunk/<case id>.json, cases.json, report.html and junit.xml under ``out``; returns the summary line."""
    budget_s = parse_budget(budget)
    for k in ops:
        try:
            registry.get(k)
        except KeyError as e:
            raise FuzzError(f"--op: {e.args[0]}") from None
    if baseline is not None and not Path(baseline).is_file():
        raise FuzzError(f"--baseline {baseline}: no such file")
    try:
        plan = RunPlan.probe(ep, None, ep_options, batch_size=batch_size)   # the EP's preflight first
    except PlanError as e:
        raise FuzzError(str(e)) from None
    limit = MAX_TENSOR_ELEMENTS if max_elements is None else max_elements
    try:
        check_memory([], limit)
    except PlanError as e:
        raise FuzzError(str(e)) from None
    plan.cfg.max_elements = limit
    lane = plan.lane
    if lane.runs_descriptors:
        raise FuzzError(f"--ep {lane.key}: the fuzzer samples ONNX-expressible cases; fuzz --ep dml for DirectML")
    base = baseline_signatures(baseline)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = plan.probe_environment(["fuzz", "--seed", str(seed), "--budget", budget], profile="fuzz",
                                 seed_policy=f"fuzz seed {seed}", optimization="disabled", three_way=not lane.is_cpu,
                                 max_elements=limit)
    writer = ResultWriter(out / RESULTS, env)
    say(f"fuzzing {lane.ep_name} for {budget_s:g} s, seed {seed}" + (f", baseline {len(base)} signatures" if base else ""))
    try:
        with Prober(lane, plan.cfg) as probe:
            res = fuzz(probe, seed=seed, budget_s=budget_s, max_cases=max_cases, ops=ops or None, baseline=base,
                       batch_size=batch_size, on_records=writer.write, log=say, max_elements=limit,
                       batch_bytes=plan.cfg.batch_bytes)
    finally:
        writer.close()
    res.ep = lane.ep_name
    write(res, out)
    try:                      # report.html / junit.xml of the failing records, linked to their shrunk cases
        write_all([out / RESULTS], out)
    except Exception as e:  # noqa: BLE001 - the fuzz results stand without the report
        say(f"report not written: {type(e).__name__}: {e}")
    return res.summary() + f" -> {out}"
