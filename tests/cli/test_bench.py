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
    assert any(x.startswith("  cpu: against expectations/cpu.yaml: ") and ", 0 unexpected, 0 fixed" in x for x in lines)
    assert any(x.startswith("  ONNX Runtime's CPU EP: 0 cases wrong beyond its known deviations") for x in lines)
    assert lines[-1].startswith("bench: exit code 0: every result as expected (checked against the shipped "
                                "expectations: cpu)")
    assert (out / "report.html").is_file() and (out / "cpu" / "results.jsonl").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_cases"] == len(plan.select_cases("smoke"))


def test_unexpected_results_give_exit_code_1_and_say_which(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "cpu.yaml").write_text("version: 1\nep: CPUExecutionProvider\nexpectations: []\n")
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(tmp_path / "o"),
              "--expectations", str(exp))
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 1
    assert any(x.startswith("    unexpected: ") and x.endswith(" FAIL") for x in lines)
    assert lines[-1].startswith("bench: exit code 1: unexpected results against the shipped expectations (cpu: ")


def test_a_lane_without_expectations_counts_crashes_only(tmp_path):
    p = bench("--profile", "smoke", "--ep", "cpu", "--no-dml", "--jobs", "2", "--out", str(tmp_path / "o"),
              "--expectations", str(tmp_path / "none"))
    assert p.returncode == 0
    assert "  cpu: no expectations shipped for this lane: only CRASH and TIMEOUT count" in p.stdout


def test_setup_that_needs_root_is_one_line_with_what_to_do(monkeypatch):
    err = ("setup dml: missing system packages: wine wine64\nInstall the system packages first (as root):\n"
           "    sudo apt-get update\n    sudo apt-get install -y --no-install-recommends wine wine64\n")
    monkeypatch.setattr(B.sys, "platform", "linux")
    monkeypatch.setattr(B.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 2, None, err))
    why = B._setup_dml()
    assert why.startswith("`onnx-dml-bench setup dml` failed: missing system packages: wine wine64")
    assert "sudo apt-get install -y --no-install-recommends wine wine64" in why and why.endswith(
        "or pass --no-dml to run the other lanes only")
    assert "\n" not in why


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
        assert any(x.startswith(f"  {lane}: against expectations/") and ", 0 unexpected, 0 fixed" in x for x in lines), lane
    assert any(x.startswith("setup dml [6/6] ") for x in lines)
    assert any(x.startswith("  DirectML itself: ") for x in lines)
    page = (out / "report.html").read_text()
    assert "What DirectML got wrong, and who is at fault" in page and 'id="fourway"' in page
    assert lines[-1].startswith("bench: exit code 0: every result as expected (checked against the shipped "
                                "expectations: cpu, dml, dml-direct)")
