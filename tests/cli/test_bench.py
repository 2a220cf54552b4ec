"""`onnx-dml-bench bench` (scripts/bench.sh, the main job): what it says before and after, the one
report of every lane, and an exit code and last line that follow the shipped expectations."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onnx_dml_bench import plan
from onnx_dml_bench.cli import bench as B

ROOT = Path(__file__).resolve().parents[2]


def bench(*args, cwd=ROOT, timeout=900):
    return subprocess.run([sys.executable, "-m", "onnx_dml_bench", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def test_cpu_lane_against_its_shipped_expectations(tmp_path):
    out = tmp_path / "latest"
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(out))
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert lines[0].startswith("bench: the smoke profile on every lane")
    assert any(x.startswith("bench: will run cpu (") for x in lines)
    assert any(x.startswith("  cpu: 132 cases in ") and "; cpu.yaml: 8 expected, 0 unexpected, 0 fixed" in x for x in lines)
    # the 8 known wrong answers and the 22 refusals a known deviation explains (float16 MaxRoiPool)
    assert "  bugs: 0; the CPU EP's known deviations apart: 30 cases" in lines
    assert "  since the previous run: none kept in this folder (the next run will say what changed)" in lines
    assert lines[-1].startswith("bench: exit code 0: every result as expected (checked against the shipped "
                                "expectations: cpu)")
    assert sum("exit code" in x for x in lines) == 1 and len(lines) <= 15       # the lane's own output: its log
    assert "  average_pooling1 FLOAT16: " in (out / "cpu.log").read_text()
    assert (out / "report.html").is_file() and (out / "cpu" / "results.jsonl").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_cases"] == len(plan.select_cases("smoke"))
    assert summary["bugs"] == [] and summary["previous"] is None
    assert summary["expectations"][0]["lane"] == "cpu" and summary["expectations"][0]["expected"] == 8
    assert 'id="expectations-status"' in (out / "report.html").read_text()
    # again: the first run is kept in previous/, and nothing changed
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(out), "--tables")
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0 and (out / "previous" / "results.jsonl").is_file()
    assert any(x.startswith("  since the previous run (previous/): 0 new bugs, 0 fixed bugs; 0 new failing cases, "
                            "0 fixed cases") for x in lines)
    assert "  average_pooling1 FLOAT16: PASS 12, FAIL 1" in lines        # --tables: the lane's own output
    assert sum("exit code" in x for x in lines) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["previous"]["new_bugs"] == [] and summary["previous"]["fixed_cases"] == []
    assert 'id="changed"' in (out / "report.html").read_text()


def test_unexpected_results_give_exit_code_1_and_say_which(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "cpu.yaml").write_text("version: 1\nep: CPUExecutionProvider\nexpectations: []\n")
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(tmp_path / "o"),
              "--expectations", str(exp))
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 1
    assert any(x.startswith("    cpu: unexpected: ") and x.endswith(" FAIL") for x in lines)
    assert any(x.startswith("    cpu: ... and 5 more unexpected (in the report)") for x in lines)
    assert lines[-1].startswith("bench: exit code 1: unexpected results against the shipped expectations (cpu: ")


def test_a_lane_without_expectations_counts_crashes_only(tmp_path):
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(tmp_path / "o"),
              "--expectations", str(tmp_path / "none"))
    assert p.returncode == 0
    assert "; no expectations apply: only CRASH and TIMEOUT count" in p.stdout


def test_setup_that_needs_root_is_one_line_with_what_to_do(monkeypatch, tmp_path):
    err = ("setup dml: missing system packages: wine wine64\nInstall the system packages first (as root):\n"
           "    sudo apt-get update\n    sudo apt-get install -y --no-install-recommends wine wine64\n")
    monkeypatch.setattr(B.sys, "platform", "linux")
    monkeypatch.setattr(B.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 2, None, err))
    why = B._setup_dml(tmp_path)
    assert why.startswith("`onnx-dml-bench setup dml` failed: missing system packages: wine wine64")
    assert "sudo apt-get install -y --no-install-recommends wine wine64" in why and why.endswith(
        "or pass --no-dml to run the other lanes only")
    assert "\n" not in why
    assert "missing system packages" in (tmp_path / "setup-dml.log").read_text()


def test_bench_sh_is_the_readme_command_and_passes_its_options():
    text = (ROOT / "scripts" / "bench.sh").read_text()
    assert 'exec "$VPY" -m onnx_dml_bench bench --profile "$profile" "$@"' in text
    assert "MINGW*|MSYS*|CYGWIN*" in text and "extra=directml" in text
    r = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "bench.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
def test_all_three_lanes_in_one_report(tmp_path, dml_stack):
    """With DirectML set up: the CPU EP, the DML EP and the direct lane in one report, whose first
    screen says who is at fault; every lane as its shipped expectations say."""
    out = tmp_path / "latest"
    p = bench("--profile", "smoke", "--jobs", "2", "--out", str(out), timeout=1800)
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-3000:]
    for lane in ("cpu", "dml", "dml-direct"):
        assert any(x.startswith(f"  {lane}: ") and ", 0 unexpected, 0 fixed" in x for x in lines), lane
    assert "setup dml [6/6] " in (out / "setup-dml.log").read_text()
    assert any(x.startswith("    DirectML itself: ") for x in lines) and len(lines) <= 40
    summary = json.loads((out / "summary.json").read_text())
    dml = [b for b in summary["bugs"] if b["party"] in ("directml", "lowering")]
    assert dml and summary["shrinking"]["bugs"] == len(dml)
    for b in dml:          # each shrunk one has its minimal case file and its bundle (repro.py, C++, DxDispatch)
        if b["bundle"]:
            folder = out / b["bundle"]
            assert (out / b["shrunk"]).is_file() and (folder / "repro.py").is_file() and (folder / "README.md").is_file()
    page = (out / "report.html").read_text()
    assert "What DirectML got wrong, and who is at fault" in page and 'id="fourway"' in page
    assert lines[-1].startswith("bench: exit code 0: every result as expected (checked against the shipped "
                                "expectations: cpu, dml, dml-direct)")


def test_test_sh_shows_why_tests_skip_and_the_readme_says_how_to_include_directml():
    text = (ROOT / "scripts" / "test.sh").read_text()
    line = next(x for x in text.splitlines() if x.startswith(".venv/bin/python -m pytest"))
    assert " -rs " in line + " " and line.endswith('"$@"')
    readme = (ROOT / "README.md").read_text()
    para = readme[readme.index("Test suite"):readme.index("scripts/test.sh", readme.index("Test suite"))]
    assert "skip" in para and "`onnx-dml-bench setup dml`" in para and "`scripts/bench.sh`" in para
