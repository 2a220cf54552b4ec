"""The command line: runs, exit codes, bad arguments, case files."""
from __future__ import annotations

import json

import pytest
import yaml

from onnx_dml_bench.cli import main
from onnx_dml_bench.casefile import CaseFileError, load
from onnx_dml_bench.results import read

from conftest import ORT_LOADS_OPSET_28

TIE_CASE = {
    "op": "max_pooling2",
    "opset": 12,
    "descriptor": {"InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                   "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                   "OutputIndicesDataType": "UINT32"},
    "inputs": {"values": {"X": [5, 5, 5, 5]}},
}


def run_cli(*args):
    return main(list(args))


def test_bad_arguments_give_one_line_and_exit_2(capsys):
    assert run_cli("run", "--ep", "nosuchep", "--out", "/tmp/x") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuchep" in err[0]
    assert run_cli("run", "--profile", "huge") == 2
    assert "--profile" in capsys.readouterr().err
    assert run_cli("run", "--jobs", "0") == 2
    assert run_cli("run", "--op", "conv") == 2
    assert "unknown operator" in capsys.readouterr().err
    assert run_cli("run", "--shard", "3/2") == 2
    assert run_cli("run", "--fail-on", "FAIL,MAYBE") == 2


def test_run_writes_results_and_exit_code_follows_fail_on(tmp_path):
    out = tmp_path / "r"
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32,u8", "--profile", "smoke",
                   "--out", str(out), "--no-report", "--fail-on", "EP_REJECTED")
    res = read(out / "results.jsonl")
    envs, recs = res.envs, res.records
    assert envs and envs[0].ep == "CPUExecutionProvider" and envs[0].ort_version
    assert {r.dtype for r in recs} <= {"FLOAT32", "UINT8"}
    rejected = any(r.verdict == "EP_REJECTED" for r in recs)
    assert code == (1 if rejected else 0)
    # ONNX Runtime 1.31 refuses the opset-28 (IR 14) CRD case at load; 1.32 runs every case of the
    # selection (SpaceToDepth-28 has a CPU kernel for float32 and uint8)
    assert rejected == (not ORT_LOADS_OPSET_28)
    # a refusal in every release: native SpaceToDepth-13 has no int16 CPU kernel -> exit code 1
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "i16", "--profile", "smoke",
                   "--out", str(tmp_path / "r3"), "--no-report", "--fail-on", "EP_REJECTED")
    recs = read(tmp_path / "r3" / "results.jsonl").records
    assert any(r.verdict == "EP_REJECTED" and r.opset == 13 for r in recs) and code == 1
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke",
                   "--out", str(tmp_path / "r2"), "--no-report", "--fail-on", "FAIL")
    assert code == 0


def test_case_file_reproduces_a_tie(tmp_path):
    f = tmp_path / "tie.yaml"
    f.write_text(yaml.safe_dump({"cases": [TIE_CASE]}))
    out = tmp_path / "r"
    assert run_cli("run", "--cases", str(f), "--out", str(out), "--no-report") == 0
    recs = read(out / "results.jsonl").records
    (r,) = recs
    assert r.verdict == "PASS" and r.family == "explicit"
    assert r.case["inputs"]["values"]["X"] == [5, 5, 5, 5]


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d.pop("op"), "op"),
    (lambda d: d["descriptor"].update(Strides=[0, 1]), "descriptor.Strides"),
    (lambda d: d["descriptor"].update(Bogus=1), "descriptor.Bogus"),
    (lambda d: d["inputs"]["values"].update(X=[1, 2, 3]), "inputs.values.X"),
    (lambda d: d.update(onnx={"ceil_mode": 7}), "onnx.ceil_mode"),
    (lambda d: d.update(inputs={"family": "nan", "seed": 1}) or d["descriptor"].update(DataType="INT8"), "inputs.family"),
])
def test_invalid_case_file_names_file_case_and_field(tmp_path, mutate, where):
    d = json.loads(json.dumps(TIE_CASE))
    d["id"] = "my-case"
    mutate(d)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps([json.loads(json.dumps(TIE_CASE)), d]))
    with pytest.raises(CaseFileError) as e:
        load(f)
    msg = str(e.value)
    assert str(f) in msg and "case 1" in msg and where in msg


def test_invalid_case_file_stops_before_running(tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_text("[{]")
    assert run_cli("run", "--cases", str(f), "--out", str(tmp_path / "r")) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_export_and_failed_from_round_trip(tmp_path):
    exp = tmp_path / "cases.json"
    assert run_cli("cases", "--profile", "smoke", "--op", "roi_pooling", "--export", str(exp)) == 0
    cases = load(exp)
    assert len(cases) > 5
    out = tmp_path / "r"
    run_cli("run", "--cases", str(exp), "--out", str(out), "--no-report")
    recs = read(out / "results.jsonl").records
    assert {r.case_id for r in recs} == {c.id for c in cases}
    failed = tmp_path / "failed.yaml"
    assert run_cli("cases", "--failed-from", str(out / "results.jsonl"), "--export", str(failed)) == 0
    again = load(failed)
    want = {r.case_id for r in recs if r.verdict not in ("PASS", "NOT_EXPRESSIBLE")}
    assert {c.id for c in again} == want and want     # ROI fp16 is refused on the CPU EP


def test_opset_axis_marks_inexpressible_cases(tmp_path):
    out = tmp_path / "r"
    run_cli("run", "--op", "average_pooling1", "--profile", "smoke", "--opset", "11,19", "--out", str(out), "--no-report")
    recs = read(out / "results.jsonl").records
    dil11 = [r for r in recs if r.opset == 11 and any(d != 1 for d in r.descriptor["Dilations"])]
    assert dil11 and all(r.verdict == "NOT_EXPRESSIBLE" and "opset 19" in r.reason for r in dil11)


# ----------------------------------------------------------------------------------------------
# Results are never lost or mixed; the terminal
# ----------------------------------------------------------------------------------------------

S2D = ("--op", "space_to_depth1", "--dtype", "f32")


def test_run_refuses_a_folder_with_results_unless_resume_or_overwrite(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)            # the default --out, reports/latest, is relative
    assert run_cli("run", *S2D) == 0
    results = tmp_path / "reports" / "latest" / "results.jsonl"
    before = results.read_bytes()
    capsys.readouterr()
    assert run_cli("run", *S2D) == 2                       # a bare run never wipes the last one
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "--overwrite" in err[0]
    assert results.read_bytes() == before
    assert run_cli("run", *S2D, "--resume", "--overwrite") == 2
    assert run_cli("run", *S2D, "--overwrite") == 0
    assert read(results).records and results.read_bytes() != before


def test_resume_refuses_another_selection_naming_it(tmp_path, capsys):
    out = tmp_path / "r"
    assert run_cli("run", *S2D, "--out", str(out), "--no-report") == 0
    env = read(out / "results.jsonl").envs[0]
    sel = env.get("selection")
    assert sel["ops"] == ["space_to_depth1"] and sel["dtypes"] == ["FLOAT32"] and env.get("selection_hash") == sel["hash"]
    capsys.readouterr()
    for extra, named in ((("--profile", "default"), "--profile"), (("--opset", "13,28"), "--opset"),
                         (("--shard", "1/2"), "--shard"), (("--optimization", "all"), "--optimization"),
                         (("--ep-option", "a=b"), "")):
        code = run_cli("run", *S2D, *extra, "--out", str(out), "--no-report", "--resume")
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and named in err[0], (extra, err)
    assert run_cli("run", *S2D, "--out", str(out), "--no-report", "--resume") == 0


def test_merge_keeps_runs_of_other_optimisation_apart(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("run", *S2D, "--out", str(a), "--no-report") == 0
    assert run_cli("run", *S2D, "--optimization", "all", "--out", str(b), "--no-report") == 0
    merged = tmp_path / "m.jsonl"
    assert run_cli("merge", str(merged), str(a / "results.jsonl"), str(b / "results.jsonl")) == 0
    assert "(2 environments)" in capsys.readouterr().out
    res = read(merged)
    assert len(res.envs) == 2 and {e.optimization for e in res.envs} == {"disabled", "all"}
    ids = {e.optimization: e.env_id for e in res.envs}
    assert ids["disabled"] != ids["all"]
    # each record keeps its own environment
    want = {r.case_id: r.env_id for r in read(a / "results.jsonl").records}
    assert want and all(v == ids["disabled"] for v in want.values())
    assert {r.env_id for r in read(b / "results.jsonl").records} == {ids["all"]}
    # the same case on the same EP from two environments: merge keeps it per environment's record
    assert run_cli("merge", str(merged), str(a / "results.jsonl")) == 2          # exists: needs --overwrite
    assert run_cli("merge", str(merged), str(a / "results.jsonl"), "--overwrite") == 0


def test_bare_command_prints_the_help(capsys):
    assert run_cli() == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: onnx-dml-bench") and len(out.splitlines()) > 10 and "  run " in out


def test_output_is_plain_lines_when_not_a_terminal(tmp_path, capsys):
    assert run_cli("run", *S2D, "--out", str(tmp_path / "r")) == 0
    cap = capsys.readouterr()
    for text in (cap.out, cap.err):
        assert "\x1b[" not in text and "\r" not in text
    assert any(line.startswith("verdicts: PASS") for line in cap.out.splitlines())
    assert any("cases on CPUExecutionProvider (" in line and line.endswith(")") for line in cap.err.splitlines())


def test_eps_lists_every_known_ep_with_how_to_get_it(capsys):
    from onnx_dml_bench.lanes import catalog
    assert run_cli("eps") == 0
    lines = capsys.readouterr().out.splitlines()
    keys = {line.split(":", 1)[0] for line in lines}
    assert set(catalog.keys()) <= keys and any(k.startswith("plugin") for k in keys)
    for line in lines:
        assert ": ok" in line or "to make it available: " in line, line
    cuda = next(x for x in lines if x.startswith("cuda:"))
    if ": ok" not in cuda:
        assert "pip install" in cuda


def test_compare_out_is_a_file_or_a_folder(tmp_path, capsys):
    out = tmp_path / "r"
    assert run_cli("run", *S2D, "--out", str(out), "--no-report") == 0
    res = str(out / "results.jsonl")
    assert run_cli("compare", res, res, "--out", str(tmp_path / "x.html")) == 0
    assert (tmp_path / "x.html").is_file() and f"wrote {tmp_path / 'x.html'}" in capsys.readouterr().out
    assert run_cli("compare", res, res, "--out", str(tmp_path / "folder")) == 0
    assert (tmp_path / "folder" / "compare.html").is_file()
    capsys.readouterr()
    assert run_cli("compare", res, res) == 0          # without --out: the text only, and how to get the page
    said = capsys.readouterr().out
    assert not (out / "compare.html").exists() and "wrote" not in said
    assert "compare.html not written: add --out" in said


def test_perf_out_is_a_file_or_a_folder(tmp_path):
    from onnx_dml_bench.perf import write_perf_json
    assert write_perf_json(tmp_path / "p.json", {"ep": "A"}) == tmp_path / "p.json"
    assert write_perf_json(tmp_path / "p.json", {"ep": "B"}) == tmp_path / "p.json"
    assert set(json.loads((tmp_path / "p.json").read_text())["eps"]) == {"A", "B"}
    assert write_perf_json(tmp_path / "d", {"ep": "A"}) == tmp_path / "d" / "perf.json"


def test_help_says_what_out_means(capsys):
    for cmd, words in (("run", "folder"), ("compare", ".html"), ("perf", ".json"), ("report", "folder")):
        assert run_cli(cmd, "--help") == 0
        assert words in capsys.readouterr().out, cmd


def test_ctrl_c_saves_and_prints_the_resume_command(tmp_path):
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time
    out = tmp_path / "r"
    argv = ["run", "--profile", "default", "--jobs", "2", "--batch-size", "4", "--out", str(out)]
    p = subprocess.Popen([sys.executable, "-m", "onnx_dml_bench.cli", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") > 8):
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)          # Ctrl-C reaches the whole process group
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    saved = len(read(results, allow_partial=True).records)
    line = next(x for x in err.splitlines() if x.startswith("interrupted: "))
    assert line.startswith(f"interrupted: {saved} of ")
    cmd = err.splitlines()[err.splitlines().index(line) + 1].strip()
    assert shlex.split(cmd) == ["onnx-dml-bench", *argv, "--resume"]


def test_the_revision_can_be_given_for_a_copy_without_git_metadata(monkeypatch):
    from onnx_dml_bench import plan
    monkeypatch.delenv(plan.REVISION_ENV, raising=False)
    own = plan.git_revision()
    monkeypatch.setenv(plan.REVISION_ENV, "abc1234")
    assert plan.git_revision() == f"abc1234 (given in {plan.REVISION_ENV})" != own


NEGATIVE_PAD_CASE = {  # ONNX Runtime's CPU EP refuses it at run time: "padding values must be non-negative"
    "op": "average_pooling1", "opset": 7,
    "descriptor": {"InputSizes": [2, 1, 6, 5], "DataType": "FLOAT16", "DimensionCount": 2, "Strides": [3, 3],
                   "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                   "IncludePadding": False, "FeatureLevel": "6.2"},
    "onnx": {"auto_pad": "SAME_LOWER"}, "inputs": {"family": "negative", "seed": 1434625879},
}


def test_onnx_runtime_logger_is_silent_and_its_text_kept(tmp_path):
    """A case ONNX Runtime fails at run time: no log line of ONNX Runtime's own logger on the
    terminal (worker processes included), the status text in the record's reason, and a last line
    that says why the exit code is what it is."""
    import subprocess
    import sys
    cases = tmp_path / "cases.yaml"
    cases.write_text(yaml.safe_dump({"schema": "onnx-dml-bench/cases/1", "cases": [NEGATIVE_PAD_CASE, TIE_CASE]}))
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "onnx_dml_bench", "run", "--ep", "cpu", "--cases", str(cases),
                        "--jobs", "2", "--out", str(out), "--no-report", "--fail-on", "EP_ERROR"],
                       capture_output=True, text=True, timeout=300)
    rec = next(r for r in read(out / "results.jsonl").records if r.op == "average_pooling1")
    assert rec.verdict == "EP_ERROR" and "padding values must be non-negative" in rec.reason
    assert "onnxruntime:" not in p.stderr + p.stdout, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert p.returncode == 1 and last.startswith("exit code 1: 1 case got a verdict or finding of --fail-on EP_ERROR"), last
    p = subprocess.run([sys.executable, "-m", "onnx_dml_bench", "run", "--ep", "cpu", "--cases", str(cases),
                        "--out", str(out), "--overwrite", "--no-report", "--fail-on", "CRASH"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == \
        "exit code 0: no case got a verdict or finding of --fail-on CRASH"


def test_ctrl_c_while_the_reports_are_written_prints_the_report_command(tmp_path, monkeypatch, capsys):
    """Ctrl-C (or SIGTERM) once every case is saved, while the run writes its reports: exit 130 (143),
    the results whole, and the last line the `report` command that writes the reports (not a bare
    "interrupted"); that command writes them."""
    import shlex

    from onnx_dml_bench.cli import run as run_cmd
    from onnx_dml_bench.cli.args import Terminated

    sel = ["run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke"]
    for exc, code in ((KeyboardInterrupt, 130), (Terminated, 143)):
        out = tmp_path / f"r{code}"

        def interrupted(*a, exc=exc, **k):
            raise exc()
        monkeypatch.setattr(run_cmd, "write_reports", interrupted)
        capsys.readouterr()
        assert main([*sel, "--out", str(out)]) == code
        err = capsys.readouterr().err
        assert "Traceback" not in err and "while writing the reports" in err, err
        cmd = err.strip().splitlines()[-1].strip()
        assert shlex.split(cmd) == ["onnx-dml-bench", "report", str(out / "results.jsonl"), "--out", str(out)], err
        assert read(out / "results.jsonl").records and not (out / "report.html").exists()
    monkeypatch.undo()
    assert main(shlex.split(cmd)[1:]) == 0 and (out / "report.html").is_file()


@pytest.mark.parametrize("text, want", [("4G", 4 << 30), ("4GiB", 4 << 30), ("4gb", 4 << 30), ("512M", 512 << 20),
                                        ("1.5G", 3 << 29), ("4294967296", 4 << 30), ("1T", 1 << 40)])
def test_sizes_read_as_a_person_writes_them(text, want):
    from onnx_dml_bench.cli.args import parse_bytes
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["x", "G", "0", "10", "-4G", "nanG", "infG", "4 G B"])
def test_a_size_that_is_none_is_one_line(text):
    from onnx_dml_bench.cli.args import BadArgs, parse_bytes
    with pytest.raises(BadArgs, match="--memory-budget must be"):
        parse_bytes(text)


def test_the_memory_budget_reaches_the_pool(tmp_path, monkeypatch, capsys):
    """``run --memory-budget``: the budget the pool keeps its batches in flight within (and each
    worker's share of freed memory it keeps), instead of 60% of the memory available."""
    from onnx_dml_bench import plan as P
    from onnx_dml_bench.execute.pool import memory_budget, worker_keep
    seen = []
    real = P.RunPlan.build.__func__

    def spy(cls, request):
        plan = real(cls, request)
        seen.append((memory_budget(plan.cfg), worker_keep(plan.cfg)))
        return plan
    monkeypatch.setattr(P.RunPlan, "build", classmethod(spy))
    out = tmp_path / "r"
    assert main(["run", "--op", "space_to_depth1", "--dtype", "f32", "--jobs", "2", "--memory-budget", "64M",
                 "--out", str(out), "--no-report"]) == 0
    assert seen == [(64 << 20, 16 << 20)]
    assert read(out / "results.jsonl").records
    assert main(["run", "--op", "space_to_depth1", "--memory-budget", "lots", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--memory-budget must be a size" in err and "Traceback" not in err
