"""The runner: verdicts end to end on the CPU EP, crash and hang isolation, batching splits,
resume, shards and merge."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.execute import FAULTS_ENV, RunConfig, run_cases
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.record import Environment
from onnx_dml_bench.verdict import RUN_FAILED, failure
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.machine import alone_threads
from onnx_dml_bench.results import ResultWriter, done_ids, in_shard, merge, read

from conftest import ORT_LOADS_OPSET_28

CPU = resolve("cpu")


def smoke():
    return [c for op in registry.OPERATORS.values() for c in op.sweep("smoke")]


@pytest.fixture(scope="module")
def smoke_records():
    recs = run_cases(smoke(), CPU, RunConfig(jobs=2, batch_size=32))
    return {r.case_id: r for r in recs}


def test_every_case_gets_one_verdict(smoke_records):
    cases = smoke()
    assert set(smoke_records) == {c.id for c in cases}
    assert all(r.verdict for r in smoke_records.values())


def test_cpu_verdicts_are_real(smoke_records):
    counts = Counter(r.verdict for r in smoke_records.values())
    assert counts["PASS"] > 50
    # ORT has no SpaceToDepth/DepthToSpace kernel for several integer types: refused, never passed
    for r in smoke_records.values():
        if r.verdict == "EP_REJECTED":
            assert r.reason
        if r.verdict == "PASS":
            assert all(o.match for o in r.outputs.values())
            # "CPUExecutionProvider", or "CPUExecutionProvider (expanded into its ONNX function body)"
            # where ONNX Runtime >= 1.32 runs a node without a kernel as its function body
            assert r.placement.nodes and all(v.split(" (")[0] == "CPUExecutionProvider"
                                                   for v in r.placement.nodes.values())


def test_cpu_opset28_space_to_depth_is_a_verdict_not_a_crash(smoke_records):
    s2d28 = [r for r in smoke_records.values() if r.op == "space_to_depth1" and r.opset == 28]
    assert s2d28
    for r in s2d28:
        if not ORT_LOADS_OPSET_28:
            assert r.verdict == "EP_REJECTED"
            assert "IR version" in r.reason
            continue
        # 1.32: a SpaceToDepth-28 kernel (float32/float64/int8/uint8) or the node's function body
        assert r.verdict == "PASS", (r.case_id, r.reason)
        (where,) = r.placement.nodes.values()
        native = r.dtype in ("FLOAT32", "FLOAT64", "INT8", "UINT8")
        assert where == ("CPUExecutionProvider" if native else
                         "CPUExecutionProvider (expanded into its ONNX function body)"), (r.case_id, where)


def test_failure_classification_uses_the_runtime_text():
    text = ("This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP "
            "has been explicitly disabled by the user.")
    assert failure(Outcome(False, "session", text))[0] == "NOT_OFFLOADED"
    assert failure(Outcome(False, "session", "Could not find an implementation for X"))[0] == "EP_REJECTED"
    assert failure(Outcome(False, "run", "boom")) == ("EP_ERROR", RUN_FAILED + "boom")
    assert failure(Outcome(False, "bench", "cannot write out.bin"))[0] == "ERROR"


def _subset(n=10):
    cases = [c for c in registry.get("max_pooling2").sweep("smoke")][:n]
    assert len(cases) == n
    return cases


def test_one_refused_case_does_not_cost_its_group():
    good = _subset(6)
    s2d = registry.get("space_to_depth1")
    refused = next(c for c in s2d.sweep("default") if c.dtype == "INT16" and c.v.get("form") == "native" and c.opset == 13)
    cases = good[:3] + [refused] + good[3:]
    recs = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=64))}
    assert recs[refused.id].verdict == "EP_REJECTED"
    assert "SpaceToDepth" in recs[refused.id].reason
    alone = {r.case_id: r.verdict for r in run_cases(good, CPU, RunConfig(batch_size=1))}
    assert {c.id: recs[c.id].verdict for c in good} == alone


def test_worker_crash_is_isolated(monkeypatch):
    cases = _subset(10)
    baseline = {r.case_id: r.verdict for r in run_cases(cases, CPU, RunConfig(batch_size=10))}
    victim = cases[4]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim.id: "abort"}))
    recs = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=10, jobs=2))}
    assert recs[victim.id].verdict == "CRASH"
    assert "died" in recs[victim.id].reason
    assert {k: r.verdict for k, r in recs.items() if k != victim.id} == {k: v for k, v in baseline.items() if k != victim.id}


def test_worker_hang_is_isolated(monkeypatch):
    cases = _subset(6)
    baseline = {r.case_id: r.verdict for r in run_cases(cases, CPU, RunConfig(batch_size=6))}
    victim = cases[1]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim.id: "hang"}))
    recs = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=6, timeout_s=4))}
    assert recs[victim.id].verdict == "TIMEOUT"
    assert {k: r.verdict for k, r in recs.items() if k != victim.id} == {k: v for k, v in baseline.items() if k != victim.id}


@pytest.mark.parametrize("fault, verdict", [("abort", "CRASH"), ("hang", "TIMEOUT")])
def test_a_batch_run_again_after_its_worker_was_lost_says_so(fault, verdict, monkeypatch):
    """The cases of a batch whose worker died or hung were run again in parts: each record says so
    (label ``batch-rerun``, and ``rerun`` naming what happened, which case the worker was running and
    the case at fault); cases of other
    batches, and a run without a fault, say nothing; the failure signatures stay as they were."""
    from onnx_dml_bench.record import RERUN_LABEL
    from onnx_dml_bench.signature import signature
    cases = _subset(12)
    clean = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=6, timeout_s=4))}
    assert not any(r.rerun or RERUN_LABEL in r.labels for r in clean.values())
    victim = cases[2]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim.id: fault}))
    recs = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=6, timeout_s=4, jobs=2))}
    ordered = sorted(cases, key=lambda c: (c.opset, c.op, c.dtype, repr(c.variant), c.id))
    mates = next({c.id for c in ordered[i:i + 6]} for i in (0, 6) if victim.id in {c.id for c in ordered[i:i + 6]})
    assert recs[victim.id].verdict == verdict and RERUN_LABEL in recs[victim.id].labels
    assert "at fault" in recs[victim.id].rerun
    # which case the worker was running when it was lost: said in every record of the incident
    at = f"it was building case {victim.id}"
    assert at in recs[victim.id].reason and at in recs[victim.id].rerun, recs[victim.id]
    for cid, r in recs.items():
        if cid in mates and cid != victim.id:
            assert RERUN_LABEL in r.labels and f"at fault: {victim.id} ({verdict})" in r.rerun, r.rerun
            assert "batch of 6 cases" in r.rerun and at in r.rerun, r.rerun
            assert r.verdict == clean[cid].verdict and signature(r) == signature(clean[cid])
        elif cid not in mates:
            assert not r.rerun and RERUN_LABEL not in r.labels


def test_resume_shard_and_merge(tmp_path):
    cases = _subset(12)
    path = tmp_path / "results.jsonl"
    env = Environment(ep="CPUExecutionProvider", machine="test")
    w = ResultWriter(path, env)
    w.write(run_cases(cases[:5], CPU, RunConfig()))
    w.close()
    # an interrupted run leaves a half-written last line: it is ignored
    with open(path, "a") as f:
        f.write('{"record": "case", "case_id": "trunc')
    assert done_ids(path) == {c.id for c in cases[:5]}
    seen = []
    todo = [c for c in cases if c.id not in done_ids(path)]
    w = ResultWriter(path, env, resume=True)
    w.write(run_cases(todo, CPU, RunConfig(), on_records=seen.extend))
    w.close()
    assert {r.case_id for r in seen} == {c.id for c in cases[5:]}
    recs = read(path).records
    assert {r.case_id for r in recs} == {c.id for c in cases}

    shards = []
    for k in (1, 2, 3):
        mine = [c for c in cases if in_shard(c.id, k, 3)]
        p = tmp_path / f"shard{k}.jsonl"
        w = ResultWriter(p, env)
        w.write(run_cases(mine, CPU, RunConfig()))
        w.close()
        shards.append(p)
    ids = [r.case_id for p in shards for r in read(p).records]
    assert sorted(ids) == sorted(c.id for c in cases)       # disjoint and complete
    n_env, n = merge(shards, tmp_path / "merged.jsonl")
    assert n == len(cases) and n_env == 1


class _RewritingBackend:
    """The CPU EP seen as an 'EP under test' whose transformations rename nodes (as WebGPU's NHWC
    layout rewrite does), or that leaves one node to another EP."""

    def __init__(self, drop=True, foreign=False):
        from onnx_dml_bench.lanes.ort import OrtBackend
        self.inner = OrtBackend(CPU, RunConfig(three_way=False))
        self.cfg = self.inner.cfg
        self.ep_name, self.is_cpu, self.cpu_build = "CPUExecutionProvider", False, "n/a"
        self.drop, self.foreign = drop, foreign

    def run_many(self, jobs):
        outs = self.inner.run_many(jobs)
        for o in outs:
            if o.assignment:
                first = sorted(o.assignment)[0]
                if self.foreign:
                    o.assignment[first] = "SomeOtherExecutionProvider"
                elif self.drop:
                    o.assignment = {f"{k}_token_1": v for k, v in o.assignment.items()}
        return outs


def test_nodes_renamed_by_the_ep_count_as_placed_on_it():
    from onnx_dml_bench.execute import run_batch
    cases = _subset(4)
    recs = run_batch(_RewritingBackend(), cases)
    assert all(r.verdict != "NOT_OFFLOADED" for r in recs)
    assert all(set(r.placement.nodes.values()) == {"CPUExecutionProvider (rewritten by the EP)"} for r in recs)
    recs = run_batch(_RewritingBackend(foreign=True), cases)
    assert any(r.verdict == "NOT_OFFLOADED" and "SomeOther" in r.reason for r in recs)


class _ExpandingBackend:
    """The CPU EP under test, as ONNX Runtime >= 1.32 reports a node it expanded into its ONNX
    function body: the node's own name is gone, the body's nodes have empty names."""

    def __init__(self, other_ep: str | None = None):
        from onnx_dml_bench.lanes.ort import OrtBackend
        self.inner = OrtBackend(CPU, RunConfig(three_way=False))
        self.cfg = self.inner.cfg
        self.ep_name, self.is_cpu, self.cpu_build = "CPUExecutionProvider", True, "n/a"
        self.other_ep = other_ep

    def run_many(self, jobs):
        from onnx_dml_bench.verdict import UNNAMED
        outs = self.inner.run_many(jobs)
        for o in outs:
            if o.assignment:
                o.assignment = {f"{UNNAMED}{i} Reshape>": (self.other_ep if self.other_ep and i == 0 else ep)
                                for i, ep in enumerate(o.assignment.values())}
        return outs


def test_nodes_expanded_into_their_function_body_count_as_placed():
    from onnx_dml_bench.execute import run_batch
    cases = _subset(4)
    recs = run_batch(_ExpandingBackend(), cases)
    assert all(r.verdict in ("PASS", "FAIL") and r.outputs for r in recs), [r.reason for r in recs]
    assert all(set(r.placement.nodes.values()) == {"CPUExecutionProvider (expanded into its ONNX function body)"}
               for r in recs)
    recs = run_batch(_ExpandingBackend(other_ep="SomeOtherExecutionProvider"), cases)
    assert all(r.verdict == "NOT_OFFLOADED" for r in recs)


class _CountingBackend:
    """The CPU EP, counting the sessions it is asked to create (one per job)."""

    def __init__(self):
        from onnx_dml_bench.lanes.ort import OrtBackend
        self.inner = OrtBackend(CPU, RunConfig(three_way=False))
        self.cfg = self.inner.cfg
        self.ep_name, self.is_cpu, self.cpu_build = "CPUExecutionProvider", True, "n/a"
        self.sessions = 0

    def run_many(self, jobs):
        self.sessions += len(jobs)
        return self.inner.run_many(jobs)


def test_a_graph_refused_alone_is_not_created_again_for_other_data():
    """The CPU EP has no int16 SpaceToDepth-13 kernel: every case of that graph is refused at
    session creation whatever data it is fed. After one of them was refused alone, the others of
    the identical graph get the same refusal without a session, and stay out of the groups they
    would have failed; other graphs are still tried."""
    from onnx_dml_bench.execute import run_batch
    s2d = registry.get("space_to_depth1")
    refused = [c for c in s2d.sweep("default") if c.dtype == "INT16" and c.v.get("form") == "native" and c.opset == 13]
    one = refused[0]
    same = [s2d.make_case(one.desc, dict(one.variant), family=f, opset=13) for f in s2d.families("INT16")]
    assert len(same) >= 3 and len({c.id for c in same}) == len(same)
    good = _subset(6)
    backend = _CountingBackend()
    first = run_batch(backend, good[:3] + same[:1] + good[3:])
    assert [r.verdict for r in first if r.case_id == same[0].id] == ["EP_REJECTED"]
    used = backend.sessions
    recs = {r.case_id: r for r in run_batch(backend, good[:3] + same[1:] + good[3:])}
    confirmed = sum(1 for r in recs.values() if r.runs is not None and r.runs.alone is not None)
    # the good cases together (and a case that failed among them, alone again); no session for the refused graph
    assert backend.sessions - used == 1 + confirmed
    for c in same[1:]:
        assert recs[c.id].verdict == "EP_REJECTED"
        assert f"identical graph, case {same[0].id}" in recs[c.id].reason
    alone = {r.case_id: r.verdict for r in run_cases(good + same, CPU, RunConfig(batch_size=1))}
    assert {c.id: recs[c.id].verdict for c in good + same[1:]} == {k: alone[k] for k in (c.id for c in good + same[1:])}
    # a different graph refused by the same kernel gap is still tried on its own
    other = next(c for c in refused if c.desc != one.desc)
    before = backend.sessions
    (r,) = run_batch(backend, [other])
    assert r.verdict == "EP_REJECTED" and backend.sessions == before + 1 and "identical graph" not in r.reason


def test_a_family_refused_before_goes_alone_and_the_rest_runs_together():
    """Graphs of one family (SpaceToDepth-13 on int16: no CPU kernel) refused alone before: the
    next batch tries its cases of that family alone first, so the other cases pass in one session
    instead of being bisected around them. The grouping changes no verdict."""
    from onnx_dml_bench.execute import run_batch
    s2d = registry.get("space_to_depth1")
    fam = [c for c in s2d.sweep("default") if c.dtype == "INT16" and c.v.get("form") == "native" and c.opset == 13]
    graphs = list({c.desc: c for c in fam}.values())
    assert len(graphs) >= 6, len(graphs)
    good = _subset(8)
    backend = _CountingBackend()
    run_batch(backend, good[:4] + graphs[:3])                # learns: three graphs of the family refused alone
    before = backend.sessions
    later = good[4:] + graphs[3:6]
    full = run_batch(backend, later)
    recs = {r.case_id: r.verdict for r in full}
    confirmed = sum(1 for r in full if r.runs is not None and r.runs.alone is not None)
    # each refused graph alone, the good ones together (and a case that failed among them, alone again)
    assert backend.sessions - before == 3 + 1 + confirmed
    alone = {r.case_id: r.verdict for r in run_cases(later, CPU, RunConfig(batch_size=1))}
    assert recs == alone
    assert [recs[c.id] for c in graphs[3:6]] == ["EP_REJECTED"] * 3
    # a fresh backend knows nothing: the same batch bisects (more sessions), with the same verdicts
    fresh = _CountingBackend()
    assert {r.case_id: r.verdict for r in run_batch(fresh, later)} == alone
    assert fresh.sessions > 4


class _ProbingBackend:
    """An EP under test (the CPU EP inside) that refuses any session holding one of the cases at
    ``poison`` (their name prefixes), as the DirectML EP refuses a session where one node would
    fall back to the CPU EP; after a refused session it knows which of its cases were at fault (as
    the DirectML lane's placement probe learns) and refuses those without a session. Counts the
    sessions it creates and the calls it is given."""

    def __init__(self, poison: set[str], three_way: bool = False):
        from onnx_dml_bench.lanes.ort import OrtBackend
        # no FAIL run again alone (confirmation): the tests count sessions and calls of the batch itself
        self.inner = OrtBackend(CPU, RunConfig(three_way=three_way, confirm=False))
        self.cfg = self.inner.cfg
        self.ep_name, self.is_cpu, self.cpu_build = "CPUExecutionProvider", False, "n/a"
        self.poison, self.known = poison, set()
        self.sessions = self.calls = 0

    @staticmethod
    def _prefixes(model: bytes) -> set[str]:
        import onnx
        return {n.name.split("_", 1)[0] + "_" for n in onnx.load_from_string(model).graph.node}

    def known_refusals(self, model: bytes) -> set[str]:
        return self._prefixes(model) & self.known

    def run_many(self, jobs):
        self.calls += 1
        text = ("This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP "
                "has been explicitly disabled by the user.")
        out = []
        for model, feeds, names, side in jobs:
            bad = self._prefixes(model) & self.poison if side == "ep" else set()
            if bad and bad <= self.known and len(self._prefixes(model)) == 1:
                out.append(Outcome(False, "session", text))          # known: no session
                continue
            self.sessions += 1
            if bad:
                self.known |= bad
                out.append(Outcome(False, "session", text))
                continue
            out.append(self.inner.run_many([(model, feeds, names, side)])[0])
        return out


def test_cases_the_backend_knows_refused_go_alone_and_the_rest_in_one_session():
    """A refused group whose refused cases the backend now knows (the DirectML lane's placement
    probe): those go alone, refused without a session, and the rest in one session, not bisected
    around them. The verdicts are those of each case alone."""
    from onnx_dml_bench.execute import run_batch
    cases = _subset(10)
    backend = _ProbingBackend({"c2_", "c7_"})
    recs = {r.case_id: r for r in run_batch(backend, cases)}
    assert backend.sessions == 2              # the whole batch (refused), then the eight others together
    assert [recs[cases[i].id].verdict for i in (2, 7)] == ["NOT_OFFLOADED"] * 2
    others = [c for i, c in enumerate(cases) if i not in (2, 7)]
    alone = {r.case_id: r.verdict for r in run_cases(others, CPU, RunConfig(batch_size=1, three_way=False))}
    assert {c.id: recs[c.id].verdict for c in others} == alone


class _RefusingBackend:
    """An EP under test (the CPU EP inside) whose session fails wherever it holds a case of
    ``poison`` (name prefixes): at ``stage`` with ``text`` (a function of
    the poisoned prefix), learning nothing (as the DirectML EP's "Exception during initialization"
    names no node). Counts the sessions it creates."""

    def __init__(self, poison, stage: str = "session", text=lambda p: "Exception during initialization: Invalid parameter."):
        from onnx_dml_bench.lanes.ort import OrtBackend
        self.inner = OrtBackend(CPU, RunConfig(three_way=False, confirm=False))
        self.cfg = self.inner.cfg
        self.ep_name, self.is_cpu, self.cpu_build = "CPUExecutionProvider", False, "n/a"
        self.poison, self.stage, self.text = poison, stage, text
        self.sessions = 0

    def run_many(self, jobs):
        out = []
        for model, feeds, names, side in jobs:
            self.sessions += 1
            bad = sorted(_ProbingBackend._prefixes(model) & self.poison) if side == "ep" else []
            out.append(Outcome(False, self.stage, self.text(bad[0])) if bad
                       else self.inner.run_many([(model, feeds, names, side)])[0])
        return out


def _sessions_and_verdicts(cases, poison, **kw):
    from onnx_dml_bench.execute import run_batch
    b = _RefusingBackend(poison, **kw)
    recs = {r.case_id: r.verdict for r in run_batch(b, cases)}
    return b.sessions, recs


class _MixedRefusals(_ProbingBackend):
    """As the DirectML EP under Wine: a session holding a case of ``init`` fails at kernel creation
    ("Exception during initialization", no node named, nothing learnt); else one holding a case of
    ``fallback`` is refused for a node left to the CPU EP, and then the backend knows those cases (the
    placement probe) and refuses any later group holding one without a session."""

    def __init__(self, fallback: set[str], init: set[str]):
        super().__init__(fallback)
        self.init = init

    def run_many(self, jobs):
        out = []
        for job in jobs:
            if job[3] == "ep" and self._prefixes(job[0]) & self.init:
                self.sessions += 1
                out.append(Outcome(False, "session", "Exception during initialization: Invalid parameter."))
            elif job[3] == "ep" and self._prefixes(job[0]) & self.known:
                out.append(Outcome(False, "session", "This session contains graph nodes that are assigned to the "
                                   "default CPU EP, but fallback to CPU EP has been explicitly disabled by the user."))
            else:
                out += super().run_many([job])
        return out


def test_a_failed_group_of_a_few_kinds_of_nodes_splits_one_part_per_kind(monkeypatch):
    """A session refused for a reason that names no node (a DirectML kernel's "Exception during
    initialization") over cases of two kinds of nodes in one model, MaxPool ones that would fall back to the CPU
    EP and an AveragePool one that fails at kernel creation: one part per kind, so the MaxPool
    part's refusal teaches which cases fall back (the placement probe) instead of halves that keep
    the failing kernel beside them. Fewer sessions than halving, the same verdicts."""
    from onnx_dml_bench.execute import batch, run_batch
    def of(op: str, n: int):          # one opset: one model, one session
        return [c for c in registry.get(op).sweep("default") if c.opset == 11 and c.dtype == "FLOAT32"][:n]
    ap, mp = of("average_pooling1", 1), of("max_pooling2", 12)
    cases = mp[:6] + ap + mp[6:]

    def sessions(split_kinds: int):
        monkeypatch.setattr(batch, "SPLIT_KINDS", split_kinds)
        b = _MixedRefusals({f"c{i}_" for i in (1, 3, 5, 8, 10, 12)}, {"c6_"})
        recs = {r.case_id: r.verdict for r in run_batch(b, cases)}
        return b.sessions, recs

    (n_kinds, recs), (n_halves, recs_halves) = sessions(8), sessions(0)
    assert n_kinds < n_halves, (n_kinds, n_halves)
    assert recs == recs_halves
    assert recs[ap[0].id] == "EP_REJECTED"
    assert [recs[cases[i].id] for i in (1, 3, 5, 8, 10, 12)] == ["NOT_OFFLOADED"] * 6
    others = [cases[i] for i in (0, 2, 4, 7, 9, 11)]
    alone = {r.case_id: r.verdict for r in run_cases(others, CPU, RunConfig(batch_size=1, three_way=False))}
    assert {c.id: recs[c.id] for c in others} == alone


def test_an_error_that_names_a_case_sends_that_case_alone(monkeypatch):
    """A run that fails naming the node at fault (ONNX Runtime's "Non-zero status code returned
    while running MaxPool node. Name:'c3_MaxPool'"): that case alone, the others in one session,
    not bisected around it; the same verdicts as when the name is not read."""
    from onnx_dml_bench.execute import batch
    cases = _subset(8)
    text = lambda p: f"Non-zero status code returned while running MaxPool node. Name:'{p}MaxPool' Status Message: x"
    n_named, recs = _sessions_and_verdicts(cases, {"c3_"}, stage="run", text=text)
    assert n_named == 3                                  # the batch, the named case alone, the others
    assert recs[cases[3].id] == "EP_ERROR"
    monkeypatch.setattr(batch, "_NAMED", __import__("re").compile(r"(?!x)x"))
    n_bisect, recs_bisect = _sessions_and_verdicts(cases, {"c3_"}, stage="run", text=text)
    assert n_bisect > n_named and recs_bisect == recs


def test_a_named_case_of_a_refused_kind_takes_its_kind_out_of_the_group(monkeypatch):
    """A group whose session fails naming one case, where every case of that kind of node fails
    the same way (RoiAlign-22's DirectML kernel, one named per session) beside cases of another
    kind: the named case alone, the other cases of its kind together, the rest together. The
    other kind's cases are then built once more, not once per failing case: fewer nodes in
    sessions than moving the named case alone, the same verdicts."""
    from onnx_dml_bench.execute import batch, run_batch

    def of(op: str, n: int):          # one opset: one model, one session
        return [c for c in registry.get(op).sweep("default") if c.opset == 11 and c.dtype == "FLOAT32"][:n]
    ap, mp = of("average_pooling1", 3), of("max_pooling2", 8)
    cases = mp[:3] + ap[:1] + mp[3:6] + ap[1:] + mp[6:]
    poison = {f"c{cases.index(c)}_" for c in ap}
    text = lambda p: f"Exception during initialization: node {p}AveragePool: Invalid parameter."

    def nodes(kind_of):
        monkeypatch.setattr(batch, "node_kinds", kind_of)
        b = _RefusingBackend(poison, stage="session", text=text)
        built = []
        inner = b.run_many
        def run_many(jobs):
            built.extend(len(_ProbingBackend._prefixes(j[0])) for j in jobs if j[3] == "ep")
            return inner(jobs)
        b.run_many = run_many
        recs = {r.case_id: r.verdict for r in run_batch(b, cases)}
        return sum(built), recs

    real = batch.node_kinds
    (n_kind, recs), (n_alone, recs_alone) = nodes(real), nodes(lambda it: ("one kind",))
    assert n_kind < n_alone, (n_kind, n_alone)
    assert recs == recs_alone
    assert [recs[c.id] for c in ap] == ["EP_REJECTED"] * 3


def test_a_failed_group_of_few_graphs_tries_one_case_of_each_alone(monkeypatch):
    """Cases of three graphs (three cases each, other data), one graph refused by a kernel that
    names no node: one case of each graph alone (three sessions), then the others of the accepted
    graphs together (the refused graph is then known: no session), fewer sessions than bisecting
    the three graphs' first cases; the verdicts of each case alone."""
    from onnx_dml_bench.execute import batch
    op = registry.get("max_pooling2")
    firsts = _subset(3)
    cases = [x for c in firsts for x in [c] + [op.make_case(c.desc, dict(c.variant), family=fam, opset=c.opset)
                                             for fam in [f for f in op.families(c.dtype) if f != c.family][:2]]]
    assert len({c.id for c in cases}) == 9
    poison = {p for p in (f"c{i}_" for i in range(9)) if cases[int(p[1:-1])].desc == firsts[1].desc}
    n_alone, recs = _sessions_and_verdicts(cases, poison)
    assert n_alone == 1 + 3 + 1, n_alone
    monkeypatch.setattr(batch, "SPLIT_GRAPHS", 0)
    n_group, recs_group = _sessions_and_verdicts(cases, poison)
    assert n_group > n_alone and recs_group == recs
    assert [recs[c.id] for c in cases if c.desc == firsts[1].desc] == ["EP_REJECTED"] * 3


def test_the_ep_and_cpu_sides_of_a_batch_share_each_call():
    """The EP side and the CPU side of the three-way comparison go to the backend in the same calls
    (one round trip into a worker outside the process, e.g. the DirectML EP's under Wine, instead of
    two), with the verdicts unchanged."""
    from onnx_dml_bench.execute import run_batch
    cases = _subset(6)
    backend = _ProbingBackend(set(), three_way=True)
    recs = run_batch(backend, cases)
    assert backend.calls == 1 and backend.sessions == 2
    assert all(r.cpu is not None for r in recs)
    alone = {r.case_id: r.verdict for r in run_cases(cases, CPU, RunConfig(batch_size=1))}
    assert {r.case_id: r.verdict for r in recs} == alone


def test_the_lane_chooses_its_batch_size_unless_the_user_does(monkeypatch):
    """Cases per model and session: the lane's own (larger where a session costs more to create, as
    on the DirectML EP under Wine), unless the run asks for another number."""
    from dataclasses import dataclass
    from typing import ClassVar
    from onnx_dml_bench import plan
    from onnx_dml_bench.lanes.base import Lane
    from onnx_dml_bench.lanes.dml_wine import WineDmlLane

    @dataclass
    class BigBatches(Lane):
        batch_size: ClassVar[int] = 7

    monkeypatch.setattr(plan, "resolve_lane", lambda ep, options=(): BigBatches("cpu", "CPUExecutionProvider", "x"))
    assert plan.RunPlan.build(plan.RunRequest(ep="cpu", ops=("space_to_depth1",))).cfg.batch_size == 7
    assert plan.RunPlan.build(plan.RunRequest(ep="cpu", ops=("space_to_depth1",), batch_size=3)).cfg.batch_size == 3
    assert Lane.batch_size == 64 and WineDmlLane.batch_size == 1024


# ---- real sizes: batches by bytes, a memory budget, records without tensors -----------------------

def _big_cases(n: int, side: int = 2048):
    from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc
    op = registry.get("max_pooling2")
    d = MaxPooling2Desc(InputSizes=(1, 1, side, side + 5), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2),
                        WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    return [op.make_case(d, {}, "random", seed_offset=i) for i in range(n)]


def test_batches_are_cut_by_estimated_memory():
    """64 cases of 4 million elements make several batches, none over the byte limit unless alone."""
    from onnx_dml_bench.execute import batches, case_bytes
    cases = _big_cases(64)
    limit = 256 << 20
    got = batches(cases, 64, limit)
    assert len(got) > 1 and sorted(c.id for b in got for c in b) == sorted(c.id for c in cases)
    assert all(len(b) == 1 or sum(map(case_bytes, b)) <= limit for b in got)
    small = registry.get("max_pooling2").sweep("smoke")
    assert [len(b) for b in batches(small, 64, limit)] == [len(small)]       # small cases: by count only


def test_the_pool_keeps_batches_in_flight_within_the_memory_budget():
    """What every worker may hold (its batch's estimate or the freed memory it keeps) stays within
    the budget; where the next batch does not fit, idle workers give their kept memory back; a
    batch over the budget runs alone, its worker's and the idle workers' kept memory given back."""
    from collections import deque
    from types import SimpleNamespace
    from onnx_dml_bench.execute import case_bytes
    from onnx_dml_bench.execute.pool import _Pool

    class FakeWorker:
        def __init__(self):
            self.batch, self.proc, self.released = None, SimpleNamespace(is_alive=lambda: True), 0

        def give(self, batch, batch_id, timeout_s, threads=None):
            self.batch, self.threads = batch, threads

        def release(self):
            self.released += 1

    cases = _big_cases(4)
    one = case_bytes(cases[0])
    pool = _Pool.__new__(_Pool)
    pool.cfg, pool.next_id, pool.keep = RunConfig(jobs=3), 0, one // 4
    pool.workers = [FakeWorker() for _ in range(3)]
    pool.released, pool.needs = {0, 1, 2}, {}                # nothing kept before a first batch
    pool.queue = deque(([c], None) for c in cases[:3])        # (batch, incident)
    pool.budget = int(1.5 * one)
    pool._dispatch()
    assert [w.batch is not None for w in pool.workers] == [True, False, False]     # a second would pass the budget
    assert [w.released for w in pool.workers] == [0, 0, 0]   # nothing kept to give back
    pool.budget = 3 * one
    pool._dispatch()
    assert all(w.batch is not None for w in pool.workers) and pool.released == set()
    # done: each keeps its freed memory, counted in the budget (the others' 2 x 1/4 + 1 > 1.4): the
    # next batch makes the others give theirs back first, once each
    for w in pool.workers:
        w.batch = None
    pool.queue, pool.budget = deque([([cases[3]], None)]), int(1.4 * one)
    pool._dispatch()
    assert [w.batch is not None for w in pool.workers] == [True, False, False]
    assert [w.released for w in pool.workers] == [0, 1, 1]
    # a batch larger than the budget runs alone: with one in flight it waits; when nothing runs, its
    # worker gives its kept memory back too
    pool.queue, pool.budget = deque([([cases[0]], None)]), one // 2
    pool._dispatch()
    assert [w.batch is not None for w in pool.workers] == [True, False, False]
    pool.workers[0].batch = None
    pool._dispatch()
    assert sum(w.batch is not None for w in pool.workers) == 1
    assert [w.released for w in pool.workers] == [1, 1, 1]
    # and its reference takes the idle workers' shares of the cores too; a batch beside others, its own
    alone = next(w for w in pool.workers if w.batch is not None)
    assert alone.threads == alone_threads(3)
    # within the budget, nobody gives anything back
    for w in pool.workers:
        w.batch, w.released = None, 0
    pool.queue, pool.budget, pool.released = deque([([cases[1]], None)]), 3 * one, set()
    pool._dispatch()
    assert [w.released for w in pool.workers] == [0, 0, 0]
    # the next batch does not fit beside the one in flight: an idle worker takes the first one
    # further on that does (it does not wait), and the large one stays first in the queue
    small = _big_cases(2, side=64)
    for w in pool.workers:
        w.batch, w.released = None, 0
    pool.released, pool.keep = set(), 0
    pool.queue, pool.budget = deque([([cases[0]], None), ([cases[1]], None), (small, None)]), one + sum(map(case_bytes, small))
    pool._dispatch()
    assert [w.batch for w in pool.workers] == [[cases[0]], small, None]
    assert list(pool.queue) == [([cases[1]], None)]
    assert [w.threads for w in pool.workers[:2]] == [None, None]


def test_a_batch_that_runs_alone_has_the_idle_workers_cores_for_its_reference(monkeypatch):
    """``machine.alone_threads``: the shares of the pool's workers together (of the host's workers
    where several pools share it), at most 8; the worker runs such a batch with them
    (``threads_for``) and goes back to its own share after it."""
    from onnx_dml_bench import machine
    from onnx_dml_bench.execute import pool

    monkeypatch.setattr(machine.os, "cpu_count", lambda: 16)
    assert [machine.alone_threads(j) for j in (1, 2, 4, 16)] == [8, 8, 8, 8]
    assert machine.alone_threads(2, host_workers=8) == 4 and machine.alone_threads(3, host_workers=32) == 3
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    assert machine.alone_threads(2) == 2 and machine.alone_threads(1) == 2 and machine.alone_threads(3) == 2
    monkeypatch.setattr(machine, "_REFERENCE_THREADS", 1)
    seen = []

    class Backend:
        def close(self):
            pass

    class Lane:
        def make_backend(self, cfg):
            return Backend()

    class Conn:
        def __init__(self, msgs):
            self.msgs, self.sent = list(msgs), []

        def recv(self):
            return self.msgs.pop(0)

        def send(self, m):
            self.sent.append(m)

    monkeypatch.setattr(pool, "share_cores", lambda jobs: None)
    monkeypatch.setattr(pool, "run_batch", lambda backend, cases: seen.append(machine.reference_threads()) or [])
    monkeypatch.setattr(pool, "holds_more_than", lambda *a: False)
    conn = Conn([("batch", 1, [], 2), ("batch", 2, []), ("batch", 3, [], None), ("stop",)])
    pool._worker_main(conn, Lane(), RunConfig(jobs=2))
    assert seen == [2, 1, 1] and [m[0] for m in conn.sent] == ["done"] * 3
    assert machine.reference_threads() == 1


def test_the_default_budget_grows_with_the_workers_within_the_memory_available(monkeypatch):
    from onnx_dml_bench.execute import pool
    from onnx_dml_bench.machine import MEMORY_SHARE, WORKER_MEMORY
    monkeypatch.setattr(pool, "memory", lambda: {"available": 64 << 30})
    assert pool.memory_budget(RunConfig(jobs=2)) == 2 * WORKER_MEMORY
    assert pool.memory_budget(RunConfig(jobs=2), 8) == 8 * WORKER_MEMORY
    assert pool.memory_budget(RunConfig(jobs=2, memory_budget=12 << 30)) == 12 << 30
    monkeypatch.setattr(pool, "memory", lambda: {"available": 4 << 30})
    assert pool.memory_budget(RunConfig(jobs=4)) == int((4 << 30) * MEMORY_SHARE)


def test_a_batch_done_leaves_no_case_arrays_in_its_operators():
    """The operators' memos of one case (AveragePool's window statistics and inputs, the ONNX
    points of the pooling family) are let go of when the batch is done: a worker holds none of a
    finished batch's arrays while it waits or runs the next."""
    from onnx_dml_bench.execute import run_batch
    cases = [c for c in registry.get("average_pooling1").sweep("smoke")][:3] + \
        [c for c in registry.get("max_pooling2").sweep("smoke")][:3]
    backend = CPU.make_backend(RunConfig(jobs=1))
    try:
        recs = run_batch(backend, cases[:3]) + run_batch(backend, cases[3:])
    finally:
        backend.close()
    assert len(recs) == 6 and all(r.verdict for r in recs)
    for op in (registry.get("average_pooling1"), registry.get("max_pooling2")):
        assert not [k for k in vars(op) if k.endswith("_memo")], vars(op).keys()


def test_a_failing_record_of_millions_of_elements_keeps_no_tensor():
    """A FAIL of a 5.5-million-element MaxPool with Indices whose EP and CPU EP are both wrong in 30%
    of the places: the record keeps statistics, ten first mismatches and a 16x16 map per output."""
    import numpy as np
    from onnx_dml_bench.execute import base_record
    from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc
    from onnx_dml_bench.record import cap, to_json
    from onnx_dml_bench.verdict import judge
    op = registry.get("max_pooling2")
    d = MaxPooling2Desc(InputSizes=(1, 128, 208, 208), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2),
                        WindowSize=(2, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1),
                        OutputIndicesDataType="UINT32")
    case = op.make_case(d, {}, "real")
    x = case.inputs()
    wrong = {k: v.copy() for k, v in op.expected(case, x).items()}
    bad = np.random.default_rng(0).random(wrong["Y"].shape) < 0.3
    wrong["Y"][bad] += 1
    wrong["Indices"][bad] += 1
    j = judge(case, x, Outcome(True, "done", None, wrong), Outcome(True, "done", None, wrong), None, ep_name="EP",
              ep_is_cpu=False)
    rec = base_record(case, "EP")
    rec.verdict, rec.outputs, rec.cpu, rec.reason, rec.labels = j.verdict, j.outputs, j.cpu, j.reason, j.labels
    assert rec.verdict == "FAIL" and len(to_json(rec)) > 15_000           # what a record kept before the cap
    text = to_json(cap(rec))
    assert len(text) < 8_000, len(text)
    for o in rec.outputs.values():
        assert len(o.first) == 10 and len(o.heatmap) <= 16 and len(o.heatmap[0]) <= 16
        assert sum(map(sum, o.heatmap)) == o.mismatches
    assert all(not o.first and o.heatmap is None and o.mismatches for o in rec.cpu.outputs.values())


def test_a_worker_killed_before_its_next_batch_never_names_the_case_before():
    """With --batch-size 1, a worker killed (kill -9) after its batch of case A and before it started
    the next one, of case B: B's CRASH record never says the worker "was judging case A" (A has its
    own record, a PASS); A's record is untouched."""
    import os
    import signal
    import threading

    from onnx_dml_bench.execute import batches
    from onnx_dml_bench.execute.pool import _Pool

    a, b = _subset(2)
    cfg = RunConfig(batch_size=1, jobs=1, timeout_s=60)
    got = {}
    pool = None

    def emit(recs):
        for r in recs:
            got[r.case_id] = r
        if a.id in got and b.id not in got and len(got) == 1:
            pid = pool.workers[0].proc.pid
            os.kill(pid, signal.SIGSTOP)         # never reads B's batch
            threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()

    pool = _Pool(CPU, cfg, batches([a, b], 1, cfg.batch_bytes), emit)
    pool.run()
    assert got[a.id].verdict != "CRASH" and a.id not in (got[a.id].reason or "")
    assert got[b.id].verdict == "CRASH", got[b.id]
    assert a.id not in got[b.id].reason and "exit code -9" in got[b.id].reason, got[b.id].reason


def test_every_worker_gets_a_share_of_the_cases(monkeypatch):
    """A lane's large batches (1,024 cases per session on the DirectML EP under Wine) are made
    smaller where a run has too few cases to give each worker one: ten cases on two workers go in
    batches of at most five, not one batch of ten that leaves a worker idle."""
    from onnx_dml_bench.execute import pool
    sizes = []
    real = pool.batches

    def spy(cases, size, max_bytes):
        sizes.append(size)
        return real(cases, size, max_bytes)

    monkeypatch.setattr(pool, "batches", spy)
    monkeypatch.setattr(pool, "_Pool", type("NoRun", (), {"__init__": lambda self, *a: None, "run": lambda self: None}))
    cases = _subset(10)
    pool.run_cases(cases, CPU, RunConfig(batch_size=64, jobs=2))
    pool.run_cases(cases, CPU, RunConfig(batch_size=3, jobs=2))
    pool.run_cases(cases, CPU, RunConfig(batch_size=64, jobs=1))
    assert sizes == [5, 3, 10]


def test_the_largest_batches_are_queued_first(monkeypatch):
    """``run_cases`` queues its batches largest first (by their estimate) where several workers take
    them, every case once; one worker takes them in batch order."""
    from onnx_dml_bench.execute import case_bytes, pool
    seen = {}

    class Capture:
        def __init__(self, lane, cfg, batches, emit):
            seen["batches"] = batches

        def run(self):
            pass
    monkeypatch.setattr(pool, "_Pool", Capture)
    cases = registry.get("max_pooling2").sweep("smoke") + _big_cases(3) + _big_cases(2, side=512)
    pool.run_cases(cases, None, RunConfig(jobs=2, batch_bytes=48 << 20))
    sizes = [sum(map(case_bytes, b)) for b in seen["batches"]]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) > 3
    assert sorted(c.id for b in seen["batches"] for c in b) == sorted(c.id for c in cases)
    pool.run_cases(cases, None, RunConfig(jobs=1, batch_bytes=48 << 20))      # one worker: in batch order
    assert seen["batches"] == pool.batches(cases, len(cases), 48 << 20)


@pytest.mark.parametrize("jobs, cores, threads", [(1, 2, 2), (2, 2, 1), (3, 2, 1), (2, 8, 4), (1, 32, 8)])
def test_a_worker_gives_the_reference_its_share_of_the_cores(jobs, cores, threads, monkeypatch):
    """Each of ``jobs`` workers lets the reference use cores // jobs threads (at least one, at most
    8), so that the workers' threads together do not outnumber the cores; outside a worker, every
    core. The worker sets it before its backend is made (before any case is judged)."""
    from onnx_dml_bench import machine
    from onnx_dml_bench.execute import pool
    from onnx_dml_bench.ops import _pooling as P
    monkeypatch.setattr(machine, "_REFERENCE_THREADS", None)
    monkeypatch.setattr(machine.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(pool, "keep_freed_memory", lambda keep: False)
    assert P.workers() == min(8, cores)
    seen = []

    class Lane:
        def make_backend(self, cfg):
            seen.append(P.workers())
            raise RuntimeError("no backend in this test")

    class Conn:
        def send(self, msg):
            seen.append(msg[0])

    pool._worker_main(Conn(), Lane(), RunConfig(jobs=jobs))
    assert seen == [threads, "fatal"]
    seen.clear()                                  # run --devices: the workers of every device count
    pool._worker_main(Conn(), Lane(), RunConfig(jobs=jobs, host_workers=2 * jobs))
    assert seen == [max(1, min(8, cores // (2 * jobs))), "fatal"]
    monkeypatch.setattr(P, "WORKERS", 1)          # a benchmark's or a test's own setting comes first
    assert P.workers() == 1


def test_a_worker_gives_back_the_freed_memory_of_a_batch_larger_than_it_keeps(monkeypatch):
    """The budget counts an idle worker at the freed memory it keeps; after a batch estimated
    above that, the worker gives its freed memory back (the heap's holes included), and after a
    smaller one it keeps it for the next arrays."""
    from onnx_dml_bench.execute import pool
    monkeypatch.setattr(pool, "keep_freed_memory", lambda keep: False)
    released, sent = [], []
    monkeypatch.setattr(pool, "release_freed_memory", lambda: released.append(1) or True)
    monkeypatch.setattr(pool, "run_batch", lambda backend, cases: [])
    cfg = RunConfig(jobs=1)
    keep = pool.worker_keep(cfg)
    monkeypatch.setattr(pool, "case_bytes", lambda case: case)       # a case here is its estimate

    class Lane:
        def make_backend(self, cfg):
            class Backend:
                def close(self):
                    pass
            return Backend()

    class Conn:
        def __init__(self, msgs):
            self.msgs = list(msgs)

        def recv(self):
            return self.msgs.pop(0)

        def send(self, msg):
            sent.append(msg[0])

    pool._worker_main(Conn([("batch", 1, [keep // 4, keep // 4]), ("stop",)]), Lane(), cfg)
    assert sent == ["done"] and released == []
    pool._worker_main(Conn([("batch", 2, [keep // 2, keep // 2 + 1]), ("stop",)]), Lane(), cfg)
    assert sent == ["done", "done"] and released == [1]
