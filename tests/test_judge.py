"""`onnx-dml-bench judge`: outputs produced outside the bench (a hardware lab, DxDispatch, WebNN,
another runtime) judged as `run` judges an EP's, from a case file, a fixtures folder or one
fixture; missing or malformed outputs are a per-case ERROR; placement is asserted, never proven."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from onnx import numpy_helper

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import dump
from onnx_dml_bench.cli import main
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.fixtures import export, load_fixture
from onnx_dml_bench.judge import ASSERTED, PLACEMENT_LABEL, JudgeError, judge_outputs, load_sources, output_names
from onnx_dml_bench.lanes.base import descriptor_case, onnx_side_variant
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.results import read

CPU = resolve("cpu")


def _cases(n_per_op=6):
    out = []
    for op in registry.OPERATORS.values():
        out += [c for c in op.sweep("smoke") if not c.operator.open_points(c, c.inputs())][:n_per_op]
    return out


def _write(folder: Path, case_id: str, names: list[str], arrays: dict, sub: str = "") -> None:
    d = folder / case_id / sub
    d.mkdir(parents=True, exist_ok=True)
    for k, n in enumerate(names):
        (d / f"output_{k}.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(arrays[n]), n).SerializeToString())


def _cpu_outputs(cases, folder: Path) -> None:
    """What ONNX Runtime's CPU EP gives for each case's one-node graph, in the .pb layout."""
    import onnxruntime as ort
    for c in cases:
        if c.operator.admit(c, size=False, data=False).step == "expressible":
            continue
        model = c.operator.to_onnx(c)
        try:
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            got = sess.run(None, c.inputs())
        except Exception:  # noqa: BLE001 - a refused case has no outputs
            continue
        names = [o.name for o in model.graph.output]
        _write(folder, c.id, names, dict(zip(names, got)))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A fixtures folder, and the CPU EP's outputs of its cases as a lab would hand them back."""
    tmp = tmp_path_factory.mktemp("lab")
    cases = _cases()
    summary = export(cases, tmp / "fixtures")
    exported = [c for c in cases if c.id in {e["id"] for e in summary.exported}]
    _cpu_outputs(exported, tmp / "outputs")
    return tmp, exported


def test_judging_the_cpu_eps_outputs_gives_the_verdicts_of_run(lab):
    tmp, cases = lab
    judged = {r.case_id: r for r in judge_outputs(load_sources(tmp / "fixtures"), tmp / "outputs",
                                                  "CPUExecutionProvider")}
    ran = {r.case_id: r for r in run_cases(cases, CPU, RunConfig(batch_size=64))}
    assert set(judged) == set(ran)
    assert {r.verdict for r in ran.values()} >= {"PASS"}
    for cid, r in ran.items():
        j = judged[cid]
        if r.verdict == "EP_REJECTED":          # the CPU EP refused: the lab handed back no outputs
            assert j.verdict == "ERROR" and "no outputs for this case" in j.reason, j.reason
            continue
        assert (j.verdict, j.attribution) == (r.verdict, r.attribution), (cid, j.reason, r.reason)
        assert {k: o.mismatches for k, o in j.outputs.items()} == {k: o.mismatches for k, o in r.outputs.items()}
        assert j.placement.proof == ASSERTED and PLACEMENT_LABEL in j.labels and j.placement.nodes is None


def test_another_eps_outputs_get_a_cpu_side_and_attribution(lab, tmp_path):
    tmp, cases = lab
    outs = tmp_path / "outs"
    victim = next(c for c in cases if c.op == "max_pooling2" and c.dtype == "FLOAT32")
    for c in cases:
        src = tmp / "outputs" / c.id
        if src.is_dir():
            (outs / c.id).mkdir(parents=True)
            for f in src.iterdir():
                (outs / c.id / f.name).write_bytes(f.read_bytes())
    y = numpy_helper.to_array(_tensor(outs / victim.id / "output_0.pb")).copy()
    y.reshape(-1)[0] += 1
    _write(outs, victim.id, ["Y"], {"Y": y})
    recs = {r.case_id: r for r in judge_outputs(load_sources(tmp / "fixtures"), outs, "WebNN")}
    r = recs[victim.id]
    assert (r.verdict, r.attribution, r.ep) == ("FAIL", "EP_WRONG", "WebNN"), r.reason
    assert r.cpu.verdict == "PASS" and "judging machine" in r.cpu.build
    assert all(x.ep == "WebNN" and PLACEMENT_LABEL in x.labels for x in recs.values() if x.verdict != "NOT_EXPRESSIBLE")


def _tensor(path: Path):
    from onnx import TensorProto
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return t


def test_missing_and_malformed_outputs_are_a_per_case_error(lab, tmp_path):
    tmp, cases = lab
    good = [c for c in cases if (tmp / "outputs" / c.id).is_dir()][:6]
    outs = tmp_path / "outs"
    for c in good:
        (outs / c.id).mkdir(parents=True)
        for f in (tmp / "outputs" / c.id).iterdir():
            (outs / c.id / f.name).write_bytes(f.read_bytes())
    missing, truncated, extra, renamed, nested = good[:5]
    import shutil
    shutil.rmtree(outs / missing.id)
    p = outs / truncated.id / "output_0.pb"
    p.write_bytes(p.read_bytes()[:-7])
    (outs / extra.id / "output_9.pb").write_bytes(b"")
    names = output_names(renamed, "onnx")
    arr = numpy_helper.to_array(_tensor(outs / renamed.id / "output_0.pb"))
    (outs / renamed.id / "output_0.pb").write_bytes(numpy_helper.from_array(arr, "not_" + names[0]).SerializeToString())
    # the backend-test layout with its data-set folder is read too
    sub = outs / nested.id / "test_data_set_0"
    sub.mkdir()
    for f in list((outs / nested.id).glob("output_*.pb")):
        f.rename(sub / f.name)
    (outs / "no-such-case").mkdir()
    sources = [s for s in load_sources(tmp / "fixtures") if s.case.id in {c.id for c in good}]
    from onnx_dml_bench.judge import JudgeRun
    found = JudgeRun()
    recs = {r.case_id: r for r in judge_outputs(sources, outs, "DmlExecutionProvider", found=found)}
    assert set(recs) == {c.id for c in good}                 # no result lost
    assert recs[missing.id].verdict == "ERROR" and "is missing" in recs[missing.id].reason
    assert recs[truncated.id].verdict == "ERROR" and "output_0.pb" in recs[truncated.id].reason
    assert recs[extra.id].verdict == "ERROR" and "output_9.pb" in recs[extra.id].reason
    assert recs[renamed.id].verdict == "ERROR" and f"not_{names[0]}" in recs[renamed.id].reason
    assert recs[nested.id].verdict in ("PASS", "FAIL") and recs[good[5].id].verdict in ("PASS", "FAIL")
    assert all("\n" not in recs[c.id].reason for c in good[:4])
    assert found.stray == ["no-such-case"]


def test_a_case_file_and_its_not_expressible_cases(tmp_path):
    op = registry.get("max_pooling2")
    ok = next(c for c in op.sweep("default") if c.family == "random" and c.dtype == "FLOAT32" and not onnx_side_variant(c))
    ne = op.make_case(ok.desc.replace(DataType="INT32", FeatureLevel="5.0", OutputIndicesDataType="UINT32"), {},
                      "random", opset=12)             # MaxPool has no int32 in ONNX
    assert op.admit(ne, size=False, data=False).step == "expressible"
    dump([ok, ne], tmp_path / "cases.yaml")
    ref = op.expected(ok, ok.inputs())
    _write(tmp_path / "outs", ok.id, output_names(ok, "onnx"), ref)
    recs = {r.case_id: r for r in judge_outputs(load_sources(tmp_path / "cases.yaml"), tmp_path / "outs", "QNN")}
    assert recs[ok.id].verdict == "PASS" and recs[ne.id].verdict == "NOT_EXPRESSIBLE"


def test_descriptor_semantics_judge_what_directml_computes(tmp_path):
    """DxDispatch runs the descriptor: outputs of the descriptor pass as DirectML's; for a
    storage_order=1 case (an ONNX-side option the descriptor does not have: column-major indices)
    the same outputs fail the ONNX graph."""
    op = registry.get("max_pooling2")
    case = next(c for c in op.sweep("default") if c.v.get("storage_order") == 1 and c.family == "random"
                and not np.array_equal(op.reference(descriptor_case(c), c.inputs())["Indices"],
                                       op.expected(c, c.inputs())["Indices"]))
    dref = op.reference(descriptor_case(case), case.inputs())
    _write(tmp_path / "outs", case.id, output_names(case, "descriptor"), dref)
    dump([case], tmp_path / "cases.json")
    src = load_sources(tmp_path / "cases.json")
    (d,) = judge_outputs(src, tmp_path / "outs", "DirectML", semantics="descriptor")
    assert d.verdict == "PASS" and "onnx-side-variant" in d.labels and d.placement.proof == ASSERTED
    (g,) = judge_outputs(src, tmp_path / "outs", "DmlExecutionProvider", semantics="onnx", cpu=False)
    assert g.verdict == "FAIL" and not g.outputs["Indices"].match and g.outputs["Y"].match


def test_every_allowed_reading_of_an_open_point_passes_and_a_perturbed_one_fails(tmp_path):
    """The allowed sets, fed through judge: for cases that touch an open point, the outputs of each
    reading the operator allows pass (and the record names the reading), a perturbed answer fails."""
    cases, runs = [], []
    for op in registry.OPERATORS.values():
        for c in op.sweep("smoke"):
            ins = c.inputs()
            pts = list(op.open_points(c, ins))
            if not pts:
                continue
            ref = op.expected(c, ins)
            alts = list(op.alternatives(c, ins, ref, pts))
            if alts:
                cases.append(c)
                runs.append((c, ref, alts))
    assert len(cases) >= 5
    names = {c.id: output_names(c, "onnx") for c in cases}
    seen = set()
    for n, (c, ref, alts) in enumerate(runs):
        out = tmp_path / f"ref{n}"
        _write(out, c.id, names[c.id], ref)
        (r,) = judge_outputs(load_sources(_one(tmp_path, c)), out, "EP", cpu=False)
        if r.verdict == "NOT_EXPRESSIBLE":        # a descriptor no ONNX graph asks for: nothing to judge
            continue
        assert r.verdict == "PASS", (c.id, r.reason)
        for k, alt in enumerate(alts[:3]):
            out = tmp_path / f"r{n}-{k}"
            _write(out, c.id, names[c.id], {**ref, **alt.outputs})
            (r,) = judge_outputs(load_sources(_one(tmp_path, c)), out, "EP", cpu=False)
            assert r.verdict == "PASS", (c.id, alt.name, r.reason)
            # outputs off the reference name the reading taken: this one, or another allowed reading
            # that gives the same outputs (RoiAlign's readings of non-finite samples overlap)
            took = [lab for lab in r.labels if lab.startswith("ep-took:")]
            assert took or not _differs(ref, alt.outputs), (c.id, alt.name, r.labels)
            seen.add(alt.name)
        bad = {k: _perturbed(v) for k, v in ref.items()}
        out = tmp_path / f"bad{n}"
        _write(out, c.id, names[c.id], bad)
        (r,) = judge_outputs(load_sources(_one(tmp_path, c)), out, "EP", cpu=False)
        assert r.verdict == "FAIL", (c.id, r.reason)
    assert len(seen) >= 2


def _one(tmp_path: Path, case) -> Path:
    p = tmp_path / f"{case.id}.json"
    if not p.exists():
        dump([case], p)
    return p


def _differs(a: dict, b: dict) -> bool:
    from onnx_dml_bench.compare import outputs_equal
    return not outputs_equal(a, {**a, **b})


def _perturbed(a: np.ndarray) -> np.ndarray:
    """``a`` with one finite element moved far (or a NaN made a number)."""
    a = np.array(a, copy=True)
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        fin = np.flatnonzero(np.isfinite(flat))
        i = fin[0] if fin.size else 0
        flat[i] = flat[i] + (1 + abs(flat[i])) * 3 if np.isfinite(flat[i]) else 7
    else:
        flat[0] = flat[0] ^ 1 if a.dtype.kind in "iu" else not flat[0]
    return a


# ----------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------

def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_the_command_writes_what_run_writes(lab, tmp_path, capsys):
    tmp, cases = lab
    rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", tmp / "outputs", "--ep", "cpu",
                   "--out", tmp_path / "j", "--device", "lab GPU 7", "--driver", "31.0.101")
    results = read(tmp_path / "j" / "results.jsonl")
    fails = [r for r in results.records if r.verdict in ("FAIL", "ERROR")]
    assert rc == (1 if any(r.verdict == "FAIL" for r in fails) else 0), out
    for f in ("report.html", "junit.xml", "summary.json"):
        assert (tmp_path / "j" / f).is_file()
    env = results.envs[0]
    assert (env.ep, env.device, env.driver, env.ep_key) == ("CPUExecutionProvider", "lab GPU 7", "31.0.101", "judge")
    assert env.get("placement") == ASSERTED and env.get("semantics") == "onnx"
    assert json.loads((tmp_path / "j" / "summary.json").read_text())["total_cases"] == len(cases)
    # the same folder again: refused without --overwrite, replaced with it
    rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", tmp / "outputs", "--ep", "cpu",
                   "--out", tmp_path / "j")
    assert rc == 2 and "--overwrite" in out
    # known failures: expected, exit code 0
    known = tmp_path / "known.yaml"
    _cli(capsys, "expectations", "--from", tmp_path / "j" / "results.jsonl", "--out", known)
    rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", tmp / "outputs", "--ep", "cpu",
                   "--out", tmp_path / "j", "--overwrite", "--expectations", known, "--no-report")
    assert rc == 0, out


def test_the_command_refuses_what_it_cannot_read_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for argv, what in (
            (("--cases", tmp_path / "nope.yaml", "--outputs", tmp_path, "--ep", "X"), "nope.yaml"),
            (("--cases", tmp_path / "empty", "--outputs", tmp_path, "--ep", "X"), "neither a fixtures folder"),
            (("--cases", _one(tmp_path, registry.get("max_pooling2").sweep("smoke")[0]), "--outputs",
              tmp_path / "none", "--ep", "X"), "--outputs"),
            (("--cases", _one(tmp_path, registry.get("max_pooling2").sweep("smoke")[0]), "--outputs", tmp_path,
              "--ep", " "), "--ep")):
        rc, out = _cli(capsys, "judge", *argv, "--out", tmp_path / "o")
        assert rc == 2 and what in out and len(out.strip().splitlines()) == 1, out
    with pytest.raises(JudgeError, match="holds no case"):
        d = tmp_path / "fx"
        export(_cases(1)[:1], d)
        (case_dir,) = [p for p in d.iterdir() if p.is_dir()]
        meta = json.loads((case_dir / "case.json").read_text())
        del meta["case"]
        (case_dir / "case.json").write_text(json.dumps(meta))
        load_sources(case_dir)


def test_a_bundle_folder_is_a_fixture(tmp_path):
    case = next(c for c in registry.get("average_pooling1").sweep("smoke") if c.family == "random")
    export([case], tmp_path / "fx")
    (src,) = load_sources(tmp_path / "fx" / case.id)
    _model, inputs, expected, _meta = load_fixture(tmp_path / "fx" / case.id)
    assert src.case.id == case.id and all(np.array_equal(inputs[k], v) for k, v in src.inputs.items())
    _write(tmp_path / "outs", case.id, output_names(case, "onnx"), expected)
    (r,) = judge_outputs([src], tmp_path / "outs", "EP", cpu=False)
    assert r.verdict == "PASS"


def test_nothing_judged_is_never_a_green_gate(lab, tmp_path, capsys):
    """No outputs at all (every case ERROR, a verdict the default --fail-on leaves out): not exit 0 but
    the "nothing judged" exit 4, with a line saying so; one case judged is a judgement again."""
    tmp, cases = lab
    (tmp_path / "none").mkdir()
    for semantics in ("onnx", "descriptor"):
        rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", tmp_path / "none", "--ep", "cpu",
                       "--semantics", semantics, "--out", tmp_path / f"j-{semantics}", "--no-report")
        recs = read(tmp_path / f"j-{semantics}" / "results.jsonl").records
        assert recs and all(r.verdict in ("ERROR", "NOT_EXPRESSIBLE") for r in recs)
        assert rc == 4 and "exit code 4: nothing judged" in out, out
    # with expectations that accept every ERROR: still nothing judged
    known = tmp_path / "known.yaml"
    _cli(capsys, "expectations", "--from", tmp_path / "j-onnx" / "results.jsonl", "--out", known)
    rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", tmp_path / "none", "--ep", "cpu",
                   "--out", tmp_path / "j-onnx", "--overwrite", "--no-report", "--expectations", known)
    assert rc == 4 and "nothing judged" in out, out
    # one case's outputs given: judged, the exit code of its verdicts
    one = tmp_path / "one"
    shutil.copytree(tmp / "outputs" / cases[0].id, one / cases[0].id)
    rc, out = _cli(capsys, "judge", "--cases", tmp / "fixtures", "--outputs", one, "--ep", "cpu",
                   "--out", tmp_path / "j1", "--no-report")
    assert rc in (0, 1) and "nothing judged" not in out, out


def test_outputs_saved_by_run_are_judged_again_to_the_same_verdicts(lab, tmp_path, capsys):
    """`run --save-outputs DIR` keeps each judged answer in the layout `judge --outputs` reads:
    judging the kept answers again gives every case its verdict of the run; a case the EP gave no
    outputs for keeps none (judged again: ERROR, never a verdict of nothing); and a kept answer
    changed afterwards fails (the judge reads what was kept, not the run's records)."""
    tmp, cases = lab
    dump(cases, tmp_path / "cases.json")
    rc, out = _cli(capsys, "run", "--ep", "cpu", "--cases", tmp_path / "cases.json", "--out", tmp_path / "run",
                   "--no-report", "--save-outputs", tmp_path / "kept")
    assert rc in (0, 1), out
    ran = {r.case_id: r for r in read(tmp_path / "run" / "results.jsonl").records}
    kept = {p.name for p in (tmp_path / "kept").iterdir()}
    assert kept == {cid for cid, r in ran.items() if r.outputs}, "a case kept outputs it was not judged on"
    assert not list((tmp_path / "kept").rglob(".output_*")), "a temporary file was left behind"
    judged = {r.case_id: r for r in judge_outputs(load_sources(tmp_path / "cases.json"), tmp_path / "kept",
                                                  "CPUExecutionProvider")}
    assert set(judged) == set(ran)
    for cid, r in ran.items():
        j = judged[cid]
        if cid not in kept:
            assert j.verdict in ("ERROR", r.verdict), (cid, j.verdict, r.verdict)
            continue
        assert (j.verdict, j.attribution) == (r.verdict, r.attribution), (cid, j.reason, r.reason)
        assert {k: o.mismatches for k, o in j.outputs.items()} == {k: o.mismatches for k, o in r.outputs.items()}
    victim = next(c for c in cases if c.id in kept and ran[c.id].verdict == "PASS" and c.dtype == "FLOAT32")
    names = output_names(victim, "onnx")
    from onnx_dml_bench.fixtures import read_tensor
    first = read_tensor(tmp_path / "kept", tmp_path / "kept" / victim.id / "output_0.pb", names[0])
    _write(tmp_path / "kept", victim.id, names[:1], {names[0]: first + np.float32(1)})
    dump([victim], tmp_path / "one.json")
    (v,) = judge_outputs(load_sources(tmp_path / "one.json"), tmp_path / "kept", "CPUExecutionProvider")
    assert v.verdict == "FAIL", v.reason
    rc, out = _cli(capsys, "run", "--ep", "cpu", "--cases", tmp_path / "cases.json", "--out", tmp_path / "r2",
                   "--save-outputs", tmp_path / "cases.json")
    assert rc == 2 and "--save-outputs" in out and "not a folder" in out, out
