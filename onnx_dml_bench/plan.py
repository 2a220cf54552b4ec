"""The run plan: what one run is — its lane, its cases, how they run, what defines its set of
verdicts, and what it records about itself — built in one place for every front end.

A front end states what it was asked in a :class:`RunRequest` (the command line's options, the
pytest plugin's ``--dml-bench-*`` options) and gets a :class:`RunPlan`:
:meth:`RunPlan.build` resolves the lane, selects the cases (:func:`select_cases`, plus the cases
only the lane adds), takes the shard, decides the three-way comparison and the run configuration,
and states the selection with its hash (compared on ``--resume``: :meth:`RunPlan.check_resume`).
:meth:`RunPlan.environment` runs the lane's preflight (its known-answer canary) and gives the
environment record. The triage front ends (shrink, triage, bundle, fuzz) probe one lane:
:meth:`RunPlan.probe` resolves it from ``--ep`` or from the results' environment and preflights it.

Errors are a :class:`PlanError`: one line for a person, naming the option as the command line
spells it (``--op``, ``--ep``, ...); the command line exits with code 2 on it, the pytest plugin
makes it a usage error.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import onnx
import onnx.defs

from . import __version__, registry
from .casefile import CaseFileError, load_noted
from .cases import Case
from .compare import NAN_POLICY
from .dtypes import DML_TO_NUMPY, parse_dtype
from .errors import PlanError, ProviderError, one_line
from .lanes.base import Lane, RunConfig, StatedLane
from .lanes.catalog import parse_options, resolve
from .lanes.ort import OPTIMIZATION_LEVELS
from .machine import MEMORY_SHARE, memory
from .ops.base import MAX_TENSOR_ELEMENTS, SIZED_PROFILES
from .record import PLACEMENT_ASSERTED, Environment
from .results import in_shard
from .results import read as read_results

PROFILES = ("smoke", "default", "full") + SIZED_PROFILES
#: the bench's revision when the tree's own git metadata cannot say it (a copy of the tree on
#: another machine): recorded as given
REVISION_ENV = "ONNX_DML_BENCH_REVISION"

__all__ = ["PROFILES", "PlanError", "REVISION_ENV", "RunPlan", "RunRequest", "check_max_elements", "check_memory",
           "check_optimization", "git_revision", "not_expressible_list", "resolve_lane", "select_cases", "select_noted",
           "shard", "sweep_cases"]


# ----------------------------------------------------------------------------------------------
# Case selection
# ----------------------------------------------------------------------------------------------

def sweep_cases(profile: str, ops=None, dtypes=None, max_elements: int | None = None) -> list[Case]:
    """The sweep cases of ``profile`` for operators ``ops`` (registry names, DML names or short
    prefixes, in their order; all when none) and data types ``dtypes`` (FLOAT32 / f32 ...; all
    when none); a sized profile (``networks``, ``limits``) within ``max_elements`` elements per
    tensor (default ``ops.base.MAX_TENSOR_ELEMENTS``). The registry's own errors: KeyError for an
    unknown operator, ValueError for an unknown data type or profile."""
    chosen = [registry.get(o) for o in ops] if ops else [registry.get(k) for k in registry.names()]
    types = {parse_dtype(t) for t in dtypes} if dtypes else None

    def of(op):
        return op.sized_sweep(profile, max_elements) if profile in SIZED_PROFILES else op.sweep(profile)
    return [c for op in chosen for c in of(op) if types is None or c.dtype in types]


def select_cases(profile: str, ops=(), dtypes=(), opset: str = "default", cases_file: Path | None = None,
                 max_elements: int | None = None) -> list[Case]:
    """The cases of a selection: a case file's, or the sweep of ``profile`` for ``ops`` and
    ``dtypes``; at the opsets ``opset`` asks for (``default``, ``all`` or a comma list). No tensor
    of a case over ``max_elements`` elements (default ``ops.base.MAX_TENSOR_ELEMENTS``): a sized
    profile leaves such cases out, a case file that has one is refused, naming the tensor."""
    return [c for c, _ in select_noted(profile, ops, dtypes, opset, cases_file, max_elements)]


def select_noted(profile: str, ops=(), dtypes=(), opset: str = "default", cases_file: Path | None = None,
                 max_elements: int | None = None) -> list[tuple[Case, str]]:
    """:func:`select_cases`, each case with its note: what a case file names it (its ``note``, else
    its ``id``), "" for a sweep's case (the performance lens names its cases by them)."""
    if cases_file:
        try:
            noted = load_noted(cases_file, max_elements)
        except CaseFileError as e:
            raise PlanError(str(e)) from None
    else:
        if profile not in PROFILES:
            raise PlanError(f"--profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        try:
            noted = [(c, "") for c in sweep_cases(profile, ops, max_elements=max_elements)]
        except KeyError as e:
            raise PlanError(f"--op: {e.args[0]}") from None
    if dtypes:
        try:
            want = {parse_dtype(d) for d in dtypes}
        except ValueError as e:
            raise PlanError(f"--dtype: {e}") from None
        noted = [(c, note) for c, note in noted if c.dtype in want]
    if opset and opset != "default":
        expanded = []
        if opset == "all":
            for c, note in noted:
                for o in sorted(set(c.operator.opsets) | {c.opset}):
                    expanded.append((c.with_opset(o), note))
        else:
            try:
                levels = [int(x) for x in opset.split(",")]
            except ValueError:
                raise PlanError(f"--opset must be 'default', 'all' or a comma-separated list of integers, got {opset!r}") from None
            _check_opsets(levels, {c.operator for c, _ in noted})
            for c, note in noted:
                expanded += [(c.with_opset(o), note) for o in levels]
        noted = list({c.id: (c, note) for c, note in expanded}.values())
    return noted


def _check_opsets(levels: list[int], operators) -> None:
    """Refuse opsets that ONNX does not define: above ``onnx.defs.onnx_opset_version()``, below 1,
    or below the first version of an operator's ONNX op."""
    top = onnx.defs.onnx_opset_version()
    for n in levels:
        if not 1 <= n <= top:
            raise PlanError(f"--opset {n}: the installed onnx {onnx.__version__} defines opsets 1 to {top}")
        for op in sorted(operators, key=lambda o: o.key):
            name = op.onnx_ops[0]
            try:
                onnx.defs.get_schema(name, n)
            except onnx.defs.SchemaError:
                raise PlanError(f"--opset {n}: ONNX defines no {name} at opset {n} (needed by {op.key})") from None


def shard(cases: list[Case], part: str | None) -> list[Case]:
    """Slice K/N (``part``) of ``cases``, by case id: the same slice on every machine; all without ``part``."""
    if not part:
        return cases
    try:
        k, n = (int(x) for x in part.split("/"))
        assert 1 <= k <= n
    except (ValueError, AssertionError):
        raise PlanError(f"--shard must be K/N with 1 <= K <= N, got {part!r}") from None
    return [c for c in cases if in_shard(c.id, k, n)]


def check_memory(cases: list[Case], max_elements: int | None, budget: int | None = None) -> None:
    """Refuse, before anything is allocated, a limit or a case the machine's memory cannot hold:
    ``max_elements`` when one float16 tensor of that many elements is larger than the machine's
    memory (:func:`check_max_elements`), a case whose estimated memory (``Operator.memory_bytes``:
    its tensors, the reference's and the comparison's) is larger than ``budget`` (default:
    ``machine.MEMORY_SHARE`` of the memory available now, the rest left as headroom). The
    PlanError names the tensor and its size."""
    check_max_elements(max_elements)
    avail = memory().get("available")
    gib = 1 << 30
    limit = budget or (int(avail * MEMORY_SHARE) if avail else None)
    if not limit:
        return
    for c in cases:
        need = c.operator.memory_bytes(c.desc)
        if need > limit:
            op, d = c.operator, c.desc
            name, shape = max(op.input_shapes(d).items(), key=lambda kv: math.prod(kv[1]))
            n = math.prod(shape)
            size = n * np.dtype(DML_TO_NUMPY[d.DataType]).itemsize
            raise PlanError(f"{'--max-elements ' + format(max_elements, ',') + ': ' if max_elements else ''}case {c.id}: "
                            f"its input {name} {list(shape)} is {n:,} {d.DataType} elements ({size / gib:.1f} GiB); with "
                            f"its outputs, reference and comparison it needs about {need / gib:.1f} GiB, more than the "
                            f"{limit / gib:.1f} GiB it may take here ({MEMORY_SHARE:.0%} of the "
                            f"{(avail or limit) / gib:.1f} GiB available, the rest left as headroom): "
                            f"lower --max-elements")


def check_max_elements(n: int | None) -> None:
    """A positive number of elements whose one float16 tensor the machine's memory can hold:
    checked before any case is generated (a limit of 2^40 is refused at once, not after the sized
    profiles' cases are built)."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise PlanError(f"--max-elements must be a positive number of elements, got {n!r}")
    total = memory().get("total") if n is not None else None
    if total and 2 * n > total:
        gib = 1 << 30
        raise PlanError(f"--max-elements {n:,}: one tensor of that many elements is {2 * n / gib:.1f} GiB "
                        f"even in float16, more than this machine's {total / gib:.1f} GiB of memory")


def check_optimization(name: str) -> None:
    if name not in OPTIMIZATION_LEVELS:
        raise PlanError(f"--optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}, got {name!r}")


# ----------------------------------------------------------------------------------------------
# Facts a run records about the bench
# ----------------------------------------------------------------------------------------------

def git_revision() -> str:
    """The bench's git revision (``-dirty`` with uncommitted changes), or the one given in
    ``ONNX_DML_BENCH_REVISION``; empty when neither says it."""
    given = os.environ.get(REVISION_ENV, "").strip()
    if given:
        return f"{given} (given in {REVISION_ENV})"
    try:
        here = Path(__file__).resolve().parent.parent
        r = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
        if r.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return r.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return ""


def not_expressible_list() -> list[dict]:
    """Every DirectML feature ONNX cannot express, as the operators declare them."""
    return [asdict(n) for op in registry.OPERATORS.values() for n in op.not_expressible()]


# ----------------------------------------------------------------------------------------------
# The plan
# ----------------------------------------------------------------------------------------------

#: selection keys as a person names them
SELECTION_NAMES = {"ops": "operators (--op)", "profile": "profile (--profile)", "dtypes": "data types (--dtype)",
                   "opset": "opsets (--opset)", "cases_file": "case file (--cases)", "ep": "EP (--ep)",
                   "ep_options": "EP options (--ep-option)", "optimization": "optimisation (--optimization)",
                   "shard": "shard (--shard)", "three_way": "three-way comparison (--no-cpu)",
                   "repeat": "runs per session (--repeat)", "max_elements": "tensor size limit (--max-elements)",
                   "devices": "devices (--devices)", "same_cases": "every case on every device (--same-cases)",
                   "cases": "the selected cases"}


@dataclass(frozen=True)
class RunRequest:
    """What a front end was asked for, option by option (the command line's names)."""
    ep: str = "cpu"
    #: EP options: KEY=VALUE strings as given, or a mapping
    ep_options: tuple[str, ...] | Mapping = ()
    profile: str = "smoke"
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    opset: str = "default"
    cases_file: Path | None = None
    shard: str | None = None
    optimization: str = "disabled"
    batch_size: int | None = None          # None: the lane's own (Lane.batch_size)
    timeout_s: float = 300.0
    jobs: int = 1
    no_cpu: bool = False
    #: runs of each session of the EP under test
    repeat: int = 1
    #: the largest tensor of a case, in elements (None: ``ops.base.MAX_TENSOR_ELEMENTS``)
    max_elements: int | None = None
    #: the estimated memory the batches in flight may hold together, in bytes (None: ``machine.MEMORY_SHARE``
    #: of the memory available, ``execute.memory_budget``)
    memory_budget: int | None = None
    #: the devices of the host to run on (``--devices``): "all" or indices "0,1"; None: the EP's default
    devices: str | None = None
    #: every device runs every case (``--same-cases``), compared bit for bit; else the cases are dealt
    same_cases: bool = False
    #: the run folder, where a lane keeps what its EP caches (``Lane.in_run_folder``); None: nowhere
    out: Path | None = None
    #: keep the EP's outputs of every case judged here (``saved``); None: keep none
    save_outputs: Path | None = None


@dataclass
class RunPlan:
    """One run: the lane, the cases, the run configuration, the three-way setting and the
    selection that defines its set of verdicts."""
    request: RunRequest
    lane: Lane
    cfg: RunConfig
    cases: list[Case] = field(default_factory=list)
    three_way: bool = True
    selection: dict | None = None
    #: what the lane's preflight added (None before it ran)
    facts: dict | None = None
    #: the lane bound to each device of ``--devices`` (empty: one run on the lane's default device)
    device_lanes: list[Lane] = field(default_factory=list)

    @classmethod
    def build(cls, request: RunRequest) -> "RunPlan":
        """The plan of a run of ``request``: PlanError when an option makes no run."""
        r = request
        lane = resolve_lane(r.ep, r.ep_options)
        if r.out is not None:
            lane = lane.in_run_folder(r.out)
        check_optimization(r.optimization)
        ops, dtypes = list(r.ops), list(r.dtypes)
        check_max_elements(r.max_elements)
        cases = select_cases(r.profile, ops, dtypes, r.opset, r.cases_file, r.max_elements)
        if not r.cases_file:
            extra = lane.extra_cases(lambda: select_cases(r.profile, ops, [], r.opset, None, r.max_elements), r.profile)
            want = {parse_dtype(d) for d in dtypes}
            cases = cases + [c for c in extra if not want or c.dtype in want]
        cases = list({c.id: c for c in shard(cases, r.shard)}.values())     # a case listed twice runs once
        three_way = not r.no_cpu and not lane.is_cpu and lane.has_cpu_side
        cfg = RunConfig(optimization=r.optimization, batch_size=r.batch_size or lane.batch_size,
                        timeout_s=r.timeout_s, jobs=r.jobs, three_way=not r.no_cpu, repeat=max(1, int(r.repeat)),
                        max_elements=r.max_elements, memory_budget=r.memory_budget,
                        save_outputs=str(r.save_outputs) if r.save_outputs is not None else None)
        check_memory(cases, r.max_elements)
        units = select_devices(lane, r.devices, r.same_cases)
        return cls(r, lane, cfg, cases, three_way, _selection(r, lane, three_way, cases, units),
                   device_lanes=[lane.on_device(u) for u in units])

    @classmethod
    def probe(cls, ep: str | None = None, env: Environment | None = None, options: dict | None = None, *,
              batch_size: int | None = None, preflight: bool = True) -> "RunPlan":
        """The plan of a front end that probes one lane (shrink, triage, bundle, fuzz): the EP
        ``ep`` if given, else the EP of the results' environment ``env`` (with its options), run
        as the results were (optimisation, three-way setting); preflighted: a lane that cannot
        give verdicts here is a PlanError (``preflight=False``: a caller whose lane has just given
        these results, its canary passed, in the same job)."""
        name = ep or (env.ep_key or env.ep if env is not None else "cpu")
        if not ep and str(name).strip().lower().startswith("plugin:"):
            # a results file may come from anywhere: the library it names is never loaded unasked
            raise PlanError(f"the results name a plugin EP library ({one_line(name, 200)}): a library a results "
                            f"file names is not loaded; name it yourself with --ep plugin:PATH")
        opts = dict(options or {}) if ep or env is None else {**(env.ep_options or {}), **(options or {})}
        lane = resolve_lane(name, opts)
        cfg = RunConfig(batch_size=lane.batch_size)
        if env is not None:
            cfg = replace(cfg, optimization=env.optimization or "disabled", three_way=env.three_way)
        if batch_size is not None:
            cfg = replace(cfg, batch_size=batch_size)
        request = RunRequest(ep=name, ep_options=opts, optimization=cfg.optimization, batch_size=cfg.batch_size)
        plan = cls(request, lane, cfg, three_way=cfg.three_way)
        if not preflight:
            return plan
        try:
            plan.preflight()
        except Exception as e:  # noqa: BLE001 - the known-answer canary, a stack that cannot start: no verdicts
            raise PlanError(f"{lane.ep_name}: the stack's preflight failed: {e}") from None
        return plan

    @classmethod
    def external(cls, ep_name: str, *, semantics: str, cases_file: Path, outputs: Path, total: int,
                 device: str = "", driver: str = "", no_cpu: bool = False) -> "ExternalPlan":
        """The plan of a judgement of outputs produced outside the bench (``judge``): no lane of the
        bench runs them (``lanes.base.StatedLane``: the EP ``ep_name``, its ``device`` and ``driver``
        as stated); ``total`` cases of ``cases_file``, their outputs in ``outputs``, answering the
        ONNX graph or the descriptor (``semantics``); the CPU EP of this machine as the second side
        of ONNX graphs unless ``no_cpu``."""
        lane = StatedLane("judge", ep_name, "outputs produced outside the bench", device=device, driver=driver)
        three_way = not no_cpu and not lane.is_cpu and semantics == "onnx"
        request = RunRequest(ep=ep_name, profile="judge", cases_file=Path(cases_file), optimization="unknown",
                             no_cpu=no_cpu)
        return ExternalPlan(request, lane, RunConfig(three_way=three_way), three_way=three_way,
                            semantics=semantics, outputs=Path(outputs), total=total)

    def with_cases(self, cases: list[Case]) -> "RunPlan":
        """The same plan over ``cases`` (its selection stated again)."""
        return replace(self, cases=list(cases),
                       selection=_selection(self.request, self.lane, self.three_way, cases))

    def check_resume(self, results: Path) -> None:
        """``--resume`` continues only the same selection: PlanError naming what differs."""
        if not results.exists():
            return
        envs = read_results(results, allow_partial=True).envs
        old = envs[-1].get("selection")
        if not isinstance(old, dict):
            raise PlanError(f"--resume: {results} does not record its selection (written by an older bench): "
                            f"run again with --overwrite")
        sel = self.selection or {}
        if old.get("hash") == sel.get("hash"):
            return
        diff = [k for k in SELECTION_NAMES if old.get(k) != sel.get(k)]
        what = "; ".join(f"{SELECTION_NAMES.get(k, k)}: {_show(old.get(k))} there, {_show(sel.get(k))} now"
                         for k in diff if k != "cases") or "the selected cases differ"
        raise PlanError(f"--resume: this selection differs from the run in {results.parent} ({what}); "
                        f"use the same options, or --overwrite to start again")

    def preflight(self) -> dict:
        """The lane's preflight, once (lanes.PreflightError when it fails)."""
        if self.facts is None:
            self.facts = self.lane.preflight()
        return self.facts

    def for_device(self, k: int) -> "RunPlan":
        """The plan of the ``k``-th device of ``--devices``: its lane, its own preflight."""
        return replace(self, lane=self.device_lanes[k], facts=None, device_lanes=[])

    def lane_environment(self) -> dict:
        """The lane's facts: the machine, the EP and its device, and what its preflight found."""
        env = self.lane.environment()
        env.update(self.preflight())
        return env

    def probe_environment(self, argv: list[str], **extra) -> Environment:
        """The environment record of a probing front end that writes results of its own (fuzz: its
        cases are made as it goes, no selection): the lane's facts (its preflight first), the
        bench's version, ``argv``, then ``extra``."""
        return Environment.from_flat({**self.lane_environment(), "bench_version": __version__, "argv": list(argv),
                                      **extra})

    def environment(self, argv: list[str], **extra) -> Environment:
        """The run's environment record: the lane's facts (its preflight first: no verdicts from a
        broken stack), the bench's version and revision, the selection, ``argv``, then ``extra``."""
        r = self.request
        env = self.lane_environment()
        env.update({"bench_version": __version__, "git_revision": git_revision(),
                    "profile": "cases-file" if r.cases_file else r.profile,
                    "cases_file": str(r.cases_file) if r.cases_file else None,
                    "opset_mode": r.opset, "optimization": r.optimization, "shard": r.shard,
                    "seed_policy": "per-case seeds (ids)",
                    "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "argv": list(argv), "not_expressible": not_expressible_list(), "three_way": self.three_way,
                    "nan_policy": NAN_POLICY, "total_cases": len(self.cases), "selection": self.selection,
                    "repeat": self.cfg.repeat, "confirm": "a case that fails in a session shared with other "
                    "cases is run again alone, and its shared session again when it passes alone" if self.cfg.confirm
                    else "off",
                    "max_elements": r.max_elements or MAX_TENSOR_ELEMENTS,
                    "selection_hash": (self.selection or {}).get("hash"), **extra})
        return Environment.from_flat(env)


@dataclass
class ExternalPlan(RunPlan):
    """A judgement of outputs produced outside the bench (:meth:`RunPlan.external`)."""
    semantics: str = "onnx"
    outputs: Path | None = None
    total: int = 0

    def environment(self, argv: list[str], **extra) -> Environment:
        """The judgement's environment record: the EP, device and driver as stated, the outputs and
        what they answer, the placement as asserted (never proven), the machine that judged them
        beside; then ``extra``."""
        lane = self.lane
        env = lane.environment()
        env.update({"bench_version": __version__, "git_revision": git_revision(), "profile": "judge",
                    "cases_file": str(self.request.cases_file), "opset_mode": "", "optimization": "unknown",
                    "seed_policy": "per-case seeds (ids)",
                    "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "argv": list(argv), "not_expressible": not_expressible_list(), "three_way": self.three_way,
                    "nan_policy": NAN_POLICY, "total_cases": self.total, "outputs": str(self.outputs),
                    "semantics": self.semantics, "placement": PLACEMENT_ASSERTED,
                    "statement": (f"Outputs produced outside the bench ({self.outputs}) and judged by it: the EP "
                                  f"({lane.ep_name}), device and driver are as the user states them; where the nodes "
                                  "ran was not observed."),
                    "judged_on": lane.judged_on(), **extra})
        return Environment.from_flat(env)


def resolve_lane(ep: str, options: tuple[str, ...] | Mapping | None = None) -> Lane:
    """The lane of ``--ep`` with its options (KEY=VALUE strings or a mapping)."""
    try:
        opts = dict(options) if isinstance(options, Mapping) else parse_options(list(options or ()))
        return resolve(ep, opts)
    except ProviderError as e:
        raise PlanError(f"--ep {ep}: {e}") from None


def _case_file_hash(path: Path, cases: list[Case]) -> str:
    """The hash of a case file's bytes; of a pipe (``--cases <(...)``, read once already), of its cases."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return hashlib.sha256(json.dumps([c.to_dict() for c in cases], sort_keys=True, default=str).encode()).hexdigest()[:16]


def select_devices(lane: Lane, spec: str | None, same_cases: bool = False) -> list[dict]:
    """The devices of ``--devices`` ("all", or indices "0,2") among the lane's devices of this host;
    PlanError naming what is wrong."""
    if spec is None:
        if same_cases:
            raise PlanError("--same-cases needs --devices: the devices that each run every case")
        return []
    units = lane.host_devices()
    if not units:
        raise PlanError(f"--devices: {lane.ep_name} has no devices to choose from on this host (a device is chosen "
                        f"for the EPs of NVIDIA GPUs (cuda, tensorrt) and the plugin EPs that list devices, e.g. webgpu)")
    have = {int(u["index"]): u for u in units}
    if spec.strip().lower() == "all":
        return [have[i] for i in sorted(have)]
    try:
        want = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise PlanError(f"--devices {spec!r}: 'all' or device indices, comma-separated (e.g. 0,1)") from None
    missing = [i for i in want if i not in have]
    if missing or not want:
        listed = ", ".join(f"{i} ({have[i].get('name', '?')})" for i in sorted(have))
        raise PlanError(f"--devices {spec!r}: no device {', '.join(map(str, missing)) or '(none given)'} here; "
                        f"{lane.ep_name} has {listed}")
    if len(set(want)) != len(want):
        raise PlanError(f"--devices {spec!r}: a device named twice")
    return [have[i] for i in want]


def _selection(r: RunRequest, lane: Lane, three_way: bool, cases: list[Case], units: list[dict] = ()) -> dict:
    """What defines a run's set of verdicts (compared on --resume), with its hash."""
    sel = {
        "ops": sorted({registry.get(o).key for o in r.ops}) if r.ops else [], "profile": "cases-file" if r.cases_file else r.profile,
        "dtypes": sorted({parse_dtype(d) for d in r.dtypes}) if r.dtypes else [], "opset": r.opset,
        "cases_file": _case_file_hash(Path(r.cases_file), cases) if r.cases_file else None,
        "ep": lane.ep_name, "ep_options": {str(k): str(v) for k, v in sorted((lane.options or {}).items())},
        "optimization": r.optimization, "shard": r.shard, "three_way": bool(three_way),
        **({"max_elements": r.max_elements} if r.max_elements else {}),
        "cases": hashlib.sha256("\n".join(sorted(c.id for c in cases)).encode()).hexdigest()[:16],
    }
    if r.repeat > 1:          # (a run of one repeat states none: the hashes of earlier runs hold)
        sel["repeat"] = r.repeat
    if units:                 # (likewise a run on the default device)
        sel["devices"] = [u.get("uuid") or u.get("index") for u in units]
        sel["same_cases"] = bool(r.same_cases)
    sel["hash"] = hashlib.sha256(json.dumps(sel, sort_keys=True).encode()).hexdigest()[:16]
    return sel


def _show(v) -> str:
    if v in (None, [], {}):
        return "none"
    if isinstance(v, list):
        return ",".join(map(str, v))
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)
