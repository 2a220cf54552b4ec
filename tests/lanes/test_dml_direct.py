"""The `--ep dml-direct` lane: the descriptor branch of the runner (execute.run_descriptor), its
verdicts (NOT_SUPPORTED from DirectML's own answer, uint indices with tie-order detection, ONNX-side
variants run as their descriptor), the canary, and end-to-end runs under Wine (canary, descriptor-only
cases, crash isolation, resume, report)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import inputs_of, reference_of, sweep
from onnx_dml_bench import cli, registry
from onnx_dml_bench.dml import select
from onnx_dml_bench.lanes import dml_direct as lane
from onnx_dml_bench.lanes.dml_direct import BUDGET, descriptor_only_cases, level_types
from onnx_dml_bench.execute import FAULTS_ENV, RunConfig, run_batch
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.results import read

MP = registry.get("max_pooling2")


def max_pool(dtype="FLOAT32", idx="UINT32", level="5.0", sizes=(1, 2, 6, 6)):
    return MP.Desc(InputSizes=sizes, DataType=dtype, DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                   StartPadding=(1, 1), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType=idx,
                   FeatureLevel=level)


class FakeBackend:
    """A descriptor backend without Wine: answers with the reference, altered by ``alter``."""
    runs_descriptors, is_cpu, cpu_build, ep_name = True, False, "", lane.EP_NAME

    def __init__(self, unsupported=None, alter=None):
        self._unsupported, self.alter, self.seen = unsupported or {}, alter, []
        self.cfg = RunConfig()

    def placement(self):
        return lane.DirectBackend.placement(self)

    def unsupported(self, case):
        return self._unsupported.get(case.dtype)

    def run(self, case, inputs):
        self.seen.append(case)
        out = {k: v.copy() for k, v in case.operator.reference(case, inputs).items()}
        if "Indices" in out:
            out["Indices"] = out["Indices"].astype(np.uint64 if case.desc.OutputIndicesDataType == "UINT64" else np.uint32)
        if self.alter:
            self.alter(case, inputs, out)
        return Outcome(True, "done", None, out, None, 1.0, 0.5)


def test_descriptor_branch_not_supported_invalid_and_not_expressible_cases_run():
    int32 = MP.make_case(max_pool("INT32", "UINT64"))
    int16 = MP.make_case(max_pool("INT16", None))
    bad = MP.make_case(max_pool().replace(WindowSize=(0, 3)))
    b = FakeBackend(unsupported={"INT16": "DirectML reports INT16 (DataType) unsupported"})
    recs = {r.case_id: r for r in run_batch(b, [int32, int16, bad])}
    assert MP.expressible(int32)        # ONNX cannot carry it ...
    assert recs[int32.id].verdict == "PASS" and recs[int32.id].ep == "DirectML"   # ... this lane runs it
    assert recs[int32.id].placement.proof.startswith("descriptor run by the bench's harness")
    assert recs[int16.id].verdict == "NOT_SUPPORTED" and "INT16" in recs[int16.id].reason
    assert recs[bad.id].verdict == "ERROR" and "invalid descriptor" in recs[bad.id].reason
    assert [c.id for c in b.seen] == [int32.id]


def test_uint_indices_tie_order_is_detected():
    case = MP.make_case(max_pool("FLOAT32", "UINT32"), family="ties")
    x, ref = inputs_of(case), reference_of(case)

    def later_tie(c, inputs, out):
        """Move one index to another element equal to the maximum inside the same window."""
        flat = inputs["X"].ravel()
        for pos, i in enumerate(out["Indices"].ravel()):
            others = np.flatnonzero(flat == flat[i])
            cand = [j for j in others if j != i and abs(int(j) - int(i)) <= 1]
            if cand:
                out["Indices"].ravel()[pos] = cand[0]
                return
        pytest.skip("no tie next to a maximum in this case's data")

    rec = run_batch(FakeBackend(alter=later_tie), [case])[0]
    assert rec.verdict == "FAIL", rec.reason
    assert "tie-order" in rec.labels, (rec.labels, rec.reason)
    assert ref["Indices"].dtype == np.int64


def test_onnx_side_variant_runs_its_descriptor_on_the_same_inputs():
    case = next(c for c in sweep("default", "max_pooling2") if dict(c.variant).get("storage_order") == 1)
    b = FakeBackend()
    rec = run_batch(b, [case])[0]
    assert rec.case_id == case.id and rec.onnx == {"storage_order": 1}
    assert rec.verdict == "PASS" and "onnx-side-variant" in rec.labels
    assert b.seen[0].variant == () and b.seen[0].seed == case.seed      # judged as the DML descriptor
    assert lane.onnx_side_variant(case) == {"storage_order": 1}
    native = next(c for c in sweep("smoke", "space_to_depth1") if dict(c.variant).get("form") == "native")
    assert lane.onnx_side_variant(native) == {}


def test_descriptor_only_cases_cover_every_level_and_type_of_the_pages():
    cases = sweep("default")
    extra = descriptor_only_cases(list(cases), "default")
    have = {(c.op, c.desc.FeatureLevel, c.dtype) for c in list(cases) + extra if hasattr(c.desc, "FeatureLevel")}
    for op in registry.OPERATORS.values():
        for level, dtype in level_types(op):
            assert (op.key, level, dtype) in have, (op.key, level, dtype)
    assert {c.dtype for c in extra if c.op == "max_pooling2"} >= {"INT32", "INT64", "UINT16", "UINT64"}
    assert any(c.desc.OutputIndicesDataType == "UINT64" for c in extra if c.op == "max_pooling2")
    assert len({c.id for c in extra}) == len(extra) and not {c.id for c in extra} & {c.id for c in cases}
    for c in extra:
        c.operator.validate(c.desc)
        assert not lane.onnx_side_variant(c)
    assert BUDGET["smoke"] < BUDGET["default"]


class FakeRunner:
    def __init__(self, y):
        self.y = y

    def run(self, key, desc, inputs):
        from onnx_dml_bench.dml.direct.runner import DirectResult
        _, _, _, want = lane.canary_case()
        return DirectResult(True, "done", None, {"Y": self.y, "Indices": want["Indices"]})


def test_canary_checks_the_known_answer():
    _, _, _, want = lane.canary_case()
    assert lane.run_canary(FakeRunner(want["Y"]))[0]
    ok, msg = lane.run_canary(FakeRunner(np.zeros_like(want["Y"])))
    assert not ok and "direct canary failed: Y" in msg


def test_failed_canary_stops_the_run_with_exit_code_3(monkeypatch, tmp_path):
    if select.find_stack() is None:
        pytest.skip("DirectML stack not installed")
    monkeypatch.setattr(lane, "preflight", lambda spec: (_ for _ in ()).throw(lane.DirectError("direct canary failed: zeros")))
    rc = cli.main(["run", "--ep", "dml-direct", "--op", "space_to_depth1", "--out", str(tmp_path / "o")])
    assert rc == 3
    assert not (tmp_path / "o" / "results.jsonl").exists()


# --------------------------------------------------------------------------------------------
# Under Wine
# --------------------------------------------------------------------------------------------

@pytest.mark.dml
@pytest.mark.xdist_group("wine")
def test_smoke_run_of_the_lane_with_a_crash_isolated_and_resume(dml_stack, tmp_path, monkeypatch):
    out = tmp_path / "direct"
    args = ["run", "--ep", "dml-direct", "--profile", "smoke", "--op", "max_pooling2,depth_to_space1",
            "--out", str(out), "--fail-on", "CRASH,TIMEOUT", "--batch-size", "16"]
    first = expected_ids()
    victim = first[3]
    monkeypatch.setenv(FAULTS_ENV, json.dumps({victim: "abort"}))
    assert cli.main(args + ["--no-report"]) == 1          # the CRASH is in --fail-on
    res = read(out / "results.jsonl")
    recs = {r.case_id: r for r in res.records}
    assert recs[victim].verdict == "CRASH"
    assert sum(r.verdict == "CRASH" for r in recs.values()) == 1
    env = res.envs[-1]
    assert env.ep == "DirectML" and env.ep_key == "dml-direct" and not env.three_way
    assert env.get("canary").startswith("direct canary passed")
    assert env.get("harness_build") and env.get("dml")["DirectML.dll"]
    assert "GeForce" not in env.device and "software Vulkan" in env.device
    ints = [r for r in recs.values() if r.op == "max_pooling2" and r.dtype in ("INT32", "INT64", "UINT16", "UINT64")]
    assert ints and all(r.verdict == "PASS" for r in ints), [(r.case_id, r.verdict, r.reason) for r in ints]
    # resume: only the crashed case is run again, now without the fault
    monkeypatch.delenv(FAULTS_ENV)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(line for line in lines if victim not in line) + "\n")
    assert cli.main(args + ["--resume"]) == 0
    res = read(out / "results.jsonl")
    assert {r.case_id: r.verdict for r in res.records}[victim] == "PASS"
    assert len(res.records) == len(first)
    assert (out / "report.html").exists()


def expected_ids() -> list[str]:
    """The ids the run will have: the sweep plus the lane's descriptor-only cases."""
    from onnx_dml_bench.plan import RunPlan, RunRequest
    cases = RunPlan.build(RunRequest(ep="dml-direct", profile="smoke", ops=("max_pooling2", "depth_to_space1"))).cases
    return sorted(c.id for c in cases)


def test_the_lane_is_resolved_and_listed(dml_stack):
    from onnx_dml_bench.lanes.catalog import list_available, resolve
    spec = resolve("dml-direct")
    assert (spec.key, spec.ep_name, spec.runs_descriptors) == ("dml-direct", "DirectML", True) and not spec.is_cpu
    assert resolve("DirectML").key == "dml-direct"
    assert "DirectML.dll" in spec.package
    assert any(r["key"] == "dml-direct" and r["status"] == "ok" for r in list_available())


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
@pytest.mark.parametrize("rise", [True, False])
def test_on_a_gpu_host_the_canary_needs_gpu_evidence(dml_stack, monkeypatch, rise):
    """A GPU stack (here lavapipe, told it is one): the direct lane's canary, like the dml lane's, needs
    the GPU to have done the work (its memory in use rose while the harness held its device), or no
    verdicts."""
    import dataclasses
    from onnx_dml_bench.dml import probe
    gpu = dataclasses.replace(select.select_stack({}), gpu="nvidia")
    monkeypatch.setattr(lane, "select_stack", lambda options=None, **kw: gpu)
    used = iter([1000] + [1500 if rise else 1000] * 1000)
    monkeypatch.setattr(probe, "gpu_snapshot", lambda timeout_s=20.0: {"gpus": [{"name": "NVIDIA H100 80GB HBM3",
                                                                                  "memory.used": next(used)}]})
    monkeypatch.setattr(probe, "adapter_info", lambda stack, timeout_s=60.0: {
        "deviceName": "NVIDIA H100 80GB HBM3", "deviceType": "PHYSICAL_DEVICE_TYPE_DISCRETE_GPU",
        "driverName": "NVIDIA", "driverInfo": "580"})
    monkeypatch.setattr(probe.MemorySampler.__init__, "__defaults__", (0.01, probe.gpu_snapshot))
    spec = lane.resolve({})
    if rise:
        env = lane.preflight(spec)
        assert env["gpu_evidence"]["ok"] and env["gpu_evidence"]["memory_rise_mib"] == 500
        assert "NVIDIA H100" in env["device"] and "GPU canary passed" in env["canary"]
    else:
        with pytest.raises(lane.DirectError, match="did not rise"):
            lane.preflight(spec)
