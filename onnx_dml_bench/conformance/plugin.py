"""pytest plugin: the bench's cases as pytest items (entry point ``pytest11: dml_bench``).

    pytest --dml-bench-ep cpu --dml-bench-profile smoke --dml-bench-op max_pooling2

Inactive unless ``--dml-bench-ep`` is given: this module then only registers its options (it
imports nothing of the bench but plain values: verdict and run-folder names). Active, it builds the
run plan the command line builds (``plan.RunPlan``: the same lane, selection and environment
record) and adds one item per case, with the case id as node id, so ``-k``, ``--deselect``,
``--lf`` and ``--junitxml`` work as for any test.

Items run in the bench's batches: the first item of a batch that this process owns runs the
batch's selected items through ``execute.run_cases`` (one model and one session per opset, worker
processes that cost a crashing EP only its case); every item then reports its own record:

- PASS -> passed (failed with the finding BATCH_DEPENDENT, as ``run`` fails by default); FAIL,
  FLAKY, EP_ERROR, CRASH, TIMEOUT, ERROR (``Verdict.FAILED``) -> failed with the one-line reason and the
  path of the case's repro script;
- NOT_OFFLOADED, EP_REJECTED, NOT_EXPRESSIBLE (and NOT_SUPPORTED) -> skipped, or xfail
  with ``--dml-bench-unsupported xfail``; never passed;
- with ``--dml-bench-expectations FILE``: a listed failure -> xfail; a listed failure that now
  passes -> failed, "fixed, remove from expectations".

With pytest-xdist (``-n N``) the plugin supplies the scheduler: work units of whole consecutive
batches (about four per worker), each sent whole to one worker, which runs it in one
``run_cases`` call (other tests are grouped by module, or by their ``xdist_group`` tag); node ids
stay the case ids. Results go to ``--dml-bench-out`` (default ``.dml-bench`` in the rootdir):
``results.jsonl`` (environment record first, as ``onnx-dml-bench run`` writes it) and
``repro/<case id>.py``.
"""
from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

import pytest

from ..errors import PlanError, one_line
from ..outdir import RESULTS
from ..record import Verdict

PLUGIN_NAME = "dml-bench-session"
UNITS_PER_WORKER = 4
COLLECTOR_NAME = "dml-bench"


class EpHelp(str):
    """The help of ``--dml-bench-ep``, which names the lanes of the catalog: made when the help is
    shown (argparse fills a help text in with ``%``), not when the plugin registers its options (the
    catalog imports every lane, too much for a plugin inactive in most pytest runs)."""

    def __mod__(self, params):
        from ..lanes.catalog import ep_help
        return str.__mod__(str(self).replace("{eps}", ep_help()), params)


EP_HELP = EpHelp("run the bench's cases on this EP ({eps}); without it the plugin collects nothing")


def pytest_addoption(parser):
    g = parser.getgroup("dml-bench", "onnx-dml-bench: DirectML operator conformance cases as tests")
    g.addoption("--dml-bench-ep", metavar="EP", default=None, help=EP_HELP)
    g.addoption("--dml-bench-ep-option", action="append", default=[], metavar="KEY=VALUE",
                help="EP option (repeatable)")
    g.addoption("--dml-bench-profile", default="default",
                help="smoke | default | full | networks | limits (default: default)")
    g.addoption("--dml-bench-max-elements", type=int, default=None, metavar="N",
                help="the largest tensor of a case, in elements (default 2^26; sizes networks and limits)")
    g.addoption("--dml-bench-op", action="append", default=[], metavar="OP",
                help="operator(s), comma-separated, repeatable (default: all)")
    g.addoption("--dml-bench-dtype", action="append", default=[], metavar="DTYPE", help="data type(s)")
    g.addoption("--dml-bench-opset", default="default", help="default | all | comma-separated opsets")
    g.addoption("--dml-bench-cases", default=None, metavar="FILE", help="exactly the cases of a case file")
    g.addoption("--dml-bench-batch-size", type=int, default=64, help="cases per model and session (default 64)")
    g.addoption("--dml-bench-timeout", type=float, default=300.0, help="seconds per batch (default 300)")
    g.addoption("--dml-bench-optimization", default="disabled", help="disabled|basic|extended|all")
    g.addoption("--dml-bench-repeat", type=int, default=1,
                help="runs of each session of the EP under test (FLAKY, NONDETERMINISTIC; default 1)")
    g.addoption("--dml-bench-no-cpu", action="store_true", default=False,
                help="skip the CPU EP side of the three-way comparison")
    g.addoption("--dml-bench-unsupported", choices=("skip", "xfail"), default="skip",
                help="NOT_OFFLOADED, EP_REJECTED, NOT_EXPRESSIBLE cases: skip (default) or xfail")
    g.addoption("--dml-bench-expectations", default=None, metavar="FILE",
                help="known failures (expectations YAML): they xfail; a listed case that now passes fails")
    g.addoption("--dml-bench-out", default=None, metavar="DIR",
                help="results.jsonl and repro scripts (default: .dml-bench in the rootdir)")


def pytest_configure(config):
    if not config.getoption("dml_bench_ep", None):
        return
    config.pluginmanager.register(Bench(config), PLUGIN_NAME)


# ----------------------------------------------------------------------------------------------
# The active part
# ----------------------------------------------------------------------------------------------

class CaseFailed(Exception):
    """A failing verdict: the message is the item's whole failure text."""


class BenchCollector(pytest.Collector):
    """The parent of the case items (its name is part of their keywords, not of their ids)."""

    def collect(self):
        bench = self.config.pluginmanager.get_plugin(PLUGIN_NAME)
        return [CaseItem.from_parent(self, name=c.id, nodeid=c.id, case=c) for c in bench.cases]


class CaseItem(pytest.Item):
    def __init__(self, *, case, **kw):
        super().__init__(**kw)
        self.case = case

    def runtest(self):
        self.config.pluginmanager.get_plugin(PLUGIN_NAME).report(self)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, self.name


def _sort_key(case):
    """The order ``execute.run_cases`` batches cases in."""
    return (case.opset, case.op, case.dtype, repr(case.variant), case.id)


class Bench:
    def __init__(self, config):
        from ..lanes.ort import OPTIMIZATION_LEVELS
        from ..plan import RunPlan, RunRequest
        from ..registry import split_names
        self.config = config
        opt = config.getoption
        self.worker_id = getattr(config, "workerinput", {}).get("workerid")
        if opt("dml_bench_optimization") not in OPTIMIZATION_LEVELS:
            raise pytest.UsageError(f"--dml-bench-optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}")
        if opt("dml_bench_batch_size") < 1:
            raise pytest.UsageError("--dml-bench-batch-size must be at least 1")
        inv = Path(config.invocation_params.dir)
        cases_file = opt("dml_bench_cases")
        request = RunRequest(
            ep=opt("dml_bench_ep"), ep_options=tuple(opt("dml_bench_ep_option")), profile=opt("dml_bench_profile"),
            ops=tuple(split_names(opt("dml_bench_op"))), dtypes=tuple(split_names(opt("dml_bench_dtype"))),
            opset=opt("dml_bench_opset"), cases_file=(inv / cases_file) if cases_file else None,
            optimization=opt("dml_bench_optimization"), batch_size=opt("dml_bench_batch_size"),
            timeout_s=opt("dml_bench_timeout"), jobs=1, no_cpu=opt("dml_bench_no_cpu"),
            repeat=max(1, int(opt("dml_bench_repeat") or 1)), max_elements=opt("dml_bench_max_elements"))
        try:
            plan = RunPlan.build(request)
        except PlanError as e:      # the command line's option names, as this plugin spells them
            raise pytest.UsageError(str(e).replace("--", "--dml-bench-", 1) if str(e).startswith("--") else str(e)) from None
        # one item per case id, in the order the runner batches them
        self.plan = plan.with_cases(sorted({c.id: c for c in plan.cases}.values(), key=_sort_key))
        self.lane, self.cfg, self.cases = self.plan.lane, self.plan.cfg, self.plan.cases
        self.by_id = {c.id: c for c in self.cases}
        out = opt("dml_bench_out")
        self.out = (inv / out) if out else Path(config.rootpath) / ".dml-bench"
        self.unsupported = opt("dml_bench_unsupported")
        self.known = None
        exp = opt("dml_bench_expectations")
        if exp:
            from ..expectations import ExpectationsError, load
            try:
                self.known = load(inv / exp)
            except (ExpectationsError, OSError) as e:
                raise pytest.UsageError(f"--dml-bench-expectations: {e}") from None
        self.records: dict = {}          # case id -> CaseRecord, of this process
        self.seen: dict[str, str] = {}   # case id -> verdict, of the reports (all workers)
        self.batch_of: dict | None = None    # case id -> batch, over this process's final items
        self.unit_of: dict = {}              # case id -> xdist work unit (consecutive batches)
        self.calls = 0                   # run_cases calls in this process
        self.batches = 0                 # batches (sessions per opset) they ran
        self.running: set[str] = set()   # case ids handed to run_cases, no record yet
        self.cond = threading.Condition()
        self.thread = None
        self.failure = None
        self.env = None
        self.env_error = None
        self.writer = None
        if self.worker_id is None:       # the controller (or a plain run): start from a clean folder
            self._clean()

    # --- output folder ------------------------------------------------------------------------

    def _clean(self) -> None:
        if self.config.getoption("dml_bench_out") is None and not (self.out / ".gitignore").exists():
            self.out.mkdir(parents=True, exist_ok=True)      # the default folder keeps out of git, as .pytest_cache
            (self.out / ".gitignore").write_text("# written by the onnx-dml-bench pytest plugin\n*\n", encoding="utf-8")
        for p in [self.out / RESULTS, *self.out.glob("results.gw*.jsonl")]:
            p.unlink(missing_ok=True)
        for p in (self.out / "repro").glob("*.py"):
            p.unlink(missing_ok=True)

    @property
    def results_path(self) -> Path:
        name = f"results.{self.worker_id}.jsonl" if self.worker_id else RESULTS
        return self.out / name

    def _show(self, p: Path) -> str:
        """A path as a person at the invocation directory types it."""
        try:
            return os.path.relpath(p, self.config.invocation_params.dir)
        except ValueError:
            return str(p)

    # --- collection ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        """Add the case items before -k, --deselect and --lf filter the collection."""
        collector = BenchCollector.from_parent(session, name=COLLECTOR_NAME, path=Path(config.rootpath),
                                               nodeid=COLLECTOR_NAME)
        items.extend(session.genitems(collector))

    def groups(self, nodeids) -> dict[str, int]:
        """Case id -> batch number over the case items of a final collection: the bench's order,
        cut every --dml-bench-batch-size cases. Workers and the xdist scheduler compute the same."""
        ids = sorted({n for n in nodeids if n in self.by_id}, key=lambda n: _sort_key(self.by_id[n]))
        size = self.cfg.batch_size
        return {n: i // size for i, n in enumerate(ids)}

    def units(self, nodeids, workers: int) -> dict[str, int]:
        """Case id -> xdist work unit: runs of consecutive batches, about four units per worker,
        so that a worker runs a unit in one ``run_cases`` call (one pool of worker processes for
        its batches) and the units still balance the workers."""
        batch = self.groups(nodeids)
        per = max(1, (max(batch.values(), default=0) + 1) // (UNITS_PER_WORKER * max(1, workers)))
        return {n: b // per for n, b in batch.items()}

    # --- xdist --------------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config, log):
        if config.getvalue("dist") in ("each", "no"):
            return None
        try:
            return _batch_scheduling()(config, log, self)
        except Exception:  # noqa: BLE001 - another xdist: its own scheduler (items still run, a batch maybe twice)
            return None

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_group_tags(self, config, items):
        """--dist loadgroup under pytest 9: pytest-xdist tags an item of an ``xdist_group`` by
        writing ``item._nodeid = "<id>@<group>"``, which pytest 9 no longer reads (it reads
        ``item._id``); carry the tag over, so that the scheduler sees the groups of the session's
        other tests. The case items carry no such mark."""
        if not getattr(config.option, "loadgroup", False):
            return
        try:
            from _pytest.nodeid import NodeId
        except ImportError:      # pytest < 9: item._nodeid is the id itself
            return
        for item in items:
            tagged = item.__dict__.get("_nodeid")
            if isinstance(tagged, str) and "@" in tagged and "@" not in item.nodeid:
                item._id = NodeId.parse(tagged)

    # --- running ------------------------------------------------------------------------------

    def _environment(self):
        from ..lanes.base import PreflightError
        try:
            return self.plan.environment(argv=["pytest", *map(str, self.config.invocation_params.args)],
                                         runner="pytest plugin", pytest_worker=self.worker_id)
        except PreflightError as e:
            raise RuntimeError(f"{self.lane.canary_name}: {e}") from None

    def _start(self) -> bool:
        """The environment record and the results file, once per process; False when the EP
        cannot be started here (every item then fails with the reason)."""
        from ..results import ResultWriter
        if self.env is None and self.env_error is None:
            try:
                self.env = self._environment()
                self.writer = ResultWriter(self.results_path, self.env)
            except Exception as e:  # noqa: BLE001
                self.env_error = one_line(f"{type(e).__name__}: {e}")
        return self.env_error is None

    def _pending(self, session, unit=None) -> list:
        """Cases of this process's items without a record (of one work unit, or all), bench order."""
        return sorted((i.case for i in session.items if isinstance(i, CaseItem) and i.nodeid not in self.records
                       and i.nodeid not in self.running and (unit is None or self.unit_of.get(i.nodeid) == unit)),
                      key=_sort_key)

    def _run(self, cases) -> None:
        """``run_cases`` on cases (whole batches of the bench's grouping): one session per batch."""
        from ..execute import run_cases
        self.calls += 1
        self.batches += len({self.batch_of.get(c.id) for c in cases})
        self.running.update(c.id for c in cases)
        try:
            run_cases(cases, self.lane, self.cfg, self._keep)
        finally:
            with self.cond:
                self.running.difference_update(c.id for c in cases)
                self.cond.notify_all()

    def _record(self, item):
        """The item's record: its batch run first when no record is there. A plain run starts
        every batch of the session at the first item, in one background ``run_cases`` call (one
        pool of worker processes for the whole run, as ``onnx-dml-bench run`` does) and each item
        waits for its own record; an xdist worker runs the work unit of the item it was sent
        (whole batches; the scheduler sends a unit whole to one worker)."""
        if item.nodeid in self.records:
            return self.records[item.nodeid]
        if not self._start():
            raise CaseFailed(f"the EP could not be started: {self.env_error}")
        if self.batch_of is None:
            ids = [i.nodeid for i in item.session.items]
            self.batch_of = self.groups(ids)
            self.unit_of = self.units(ids, int(getattr(self.config, "workerinput", {}).get("workercount", 1)))
        with self.cond:
            busy = item.nodeid in self.running
        if not busy:
            if self.worker_id is None:
                todo = self._pending(item.session)
                self.running.update(c.id for c in todo)
                self.thread = threading.Thread(target=self._background, args=(todo,), daemon=True,
                                               name="dml-bench-runner")
                self.thread.start()
            else:
                self._run(self._pending(item.session, self.unit_of.get(item.nodeid)))
        with self.cond:
            self.cond.wait_for(lambda: item.nodeid in self.records or item.nodeid not in self.running)
        if item.nodeid not in self.records and self.failure is not None:
            raise CaseFailed(f"the bench's run failed: {self.failure}")
        return self.records.get(item.nodeid)

    def _background(self, cases) -> None:
        try:
            self._run(cases)
        except BaseException as e:  # noqa: BLE001 - waiting items report it
            self.failure = one_line(f"{type(e).__name__}: {e}")

    def _keep(self, recs) -> None:
        self.writer.write(recs)
        for r in recs:
            if r.verdict in Verdict.FAILED:
                self._repro(r)
        with self.cond:
            for r in recs:
                self.records[r.case_id] = r
            self.cond.notify_all()

    def _repro(self, rec) -> Path:
        from ..report.repro import repro_script
        p = self.out / "repro" / f"{rec.case_id}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(repro_script(rec, self.env), encoding="utf-8")
        return p

    def report(self, item) -> None:
        """Run the item's batch if needed, then turn its record into the item's outcome."""
        rec = self._record(item)
        if rec is None:
            raise CaseFailed(f"{item.nodeid}: the bench returned no record for this case")
        item.user_properties.append(("dml_bench_verdict", rec.verdict))
        for f in rec.findings:
            item.user_properties.append(("dml_bench_finding", f))
        what = rec.verdict + (f" ({rec.attribution})" if rec.attribution else "")
        reason = one_line(rec.reason) or "no reason recorded"
        if self.known is not None:
            cls = self.known.classify([rec], Verdict.FAILED)
            if cls.fixed:
                e = cls.fixed[0].entry
                raise CaseFailed(f"fixed, remove from expectations: {rec.case_id} now PASSes "
                                 f"(expectations[{e.index}] in {self._show(self.known.path)} expects "
                                 f"{'/'.join(sorted(e.verdicts))})")
            if cls.expected and rec.verdict != "PASS":
                e = cls.expected[0].entry
                pytest.xfail(f"expected {what} (expectations[{e.index}]"
                             + (f": {e.reason}" if e.reason else "") + f"): {reason}")
        if rec.verdict in Verdict.FAILED:
            repro = self.out / "repro" / f"{rec.case_id}.py"
            if not repro.exists():
                repro = self._repro(rec)
            raise CaseFailed(f"{what}: {reason} | repro: {self._show(repro)}")
        if rec.verdict == "PASS":
            if "BATCH_DEPENDENT" in rec.findings:     # a wrong answer in a shared session (run's --fail-on default)
                raise CaseFailed(f"finding BATCH_DEPENDENT: {reason}")
            return
        msg = f"{what}: {reason}"
        if self.unsupported == "xfail":
            pytest.xfail(msg)
        pytest.skip(msg)

    # --- end ----------------------------------------------------------------------------------

    def pytest_sessionfinish(self, session):
        if self.thread is not None:
            self.thread.join(timeout=0 if session.shouldstop or session.shouldfail else None)
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.worker_id is not None:
            return
        parts = sorted(self.out.glob("results.gw*.jsonl"))   # xdist: one file per worker, merged
        if parts:
            from ..results import merge
            merge(parts, self.out / RESULTS)
            for p in parts:
                p.unlink(missing_ok=True)

    def pytest_runtest_logreport(self, report):
        """Verdicts as reported (from xdist workers too), for the summary."""
        if report.when == "call":
            for key, value in report.user_properties:
                if key == "dml_bench_verdict":
                    self.seen[report.nodeid] = value

    def pytest_terminal_summary(self, terminalreporter):
        if not self.seen:
            return
        tr = terminalreporter
        path = self.out / RESULTS
        tr.write_sep("-", "onnx-dml-bench")
        counts = Counter(self.seen.values())
        batches = f" in {self.batches} batch(es)" if self.batches else ""
        tr.write_line(f"{self.lane.ep_name}: {len(self.seen)} cases{batches}: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" -> {self._show(path)}")
        if self.known is not None:
            recs = [{"case_id": k, "ep": self.lane.ep_name, "verdict": v} for k, v in self.seen.items()]
            for line in self.known.classify(recs, Verdict.FAILED).summary_lines(limit=20):
                tr.write_line(line)


def _batch_scheduling():
    """xdist's scope scheduler with the bench's batches as the scopes of the case items."""
    from xdist.scheduler import LoadScopeScheduling

    class BatchScheduling(LoadScopeScheduling):
        def __init__(self, config, log, bench):
            super().__init__(config, log)
            self.bench = bench
            self._scopes = None

        def _split_scope(self, nodeid: str) -> str:
            if self._scopes is None:
                self._scopes = self.bench.units(self.collection or [], len(self.registered_collections))
            k = self._scopes.get(nodeid)
            if k is not None:
                return f"{COLLECTOR_NAME}-unit-{k}"
            if "@" in nodeid:                      # --dist loadgroup's tag: the group is the scope
                return nodeid.rsplit("@", 1)[-1]
            return super()._split_scope(nodeid)

    return BatchScheduling
