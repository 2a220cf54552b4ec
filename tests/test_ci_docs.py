"""docs/ci.md: its copy-paste blocks use the command line as it is. Every `onnx-dml-bench`
command in the page uses options the command has; the GitLab fragment is valid YAML with
`parallel:` sharding through CI_NODE_INDEX/CI_NODE_TOTAL, a JUnit report and a merge job that
needs every sharded job; and its scripts, run here as GitLab would run them (with a small
profile appended), shard, merge and report."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
SMALL = " --profile smoke --op max_pooling2 --no-report"      # later options win over the page's


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@lru_cache(maxsize=None)
def options(command: str) -> frozenset[str]:
    res = subprocess.run([sys.executable, "-m", "onnx_dml_bench", command, "--help"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return frozenset(re.findall(r"(?<![\w-])--[a-z][a-z-]*", res.stdout))


def gitlab() -> dict:
    (text,) = [b for b in blocks("yaml") if "CI_NODE_INDEX" in b]
    return yaml.safe_load(text)


def test_every_command_uses_real_options():
    calls = re.findall(r"onnx-dml-bench (run|merge|report)\b([^\n`]*)", DOC.read_text(encoding="utf-8"))
    assert {c for c, _ in calls} == {"run", "merge", "report"}
    for cmd, rest in calls:
        used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest))
        assert used <= options(cmd), (cmd, rest, used - options(cmd))


def test_pytest_plugin_section_is_written():
    text = DOC.read_text(encoding="utf-8")
    section = text.split("pytest plugin", 1)[1]
    assert "TODO" not in section and "--dml-bench-ep" in section and "```" in section


def test_gitlab_fragment_structure():
    doc = gitlab()
    shard_jobs = {k: v for k, v in doc.items() if not k.startswith(".") and isinstance(v, dict)
                  and v.get("extends") == ".bench-shard"}
    template = doc[".bench-shard"]
    assert isinstance(template["parallel"], int) and template["parallel"] >= 2
    run = next(s for s in template["script"] if "onnx-dml-bench run" in s)
    assert "--shard $CI_NODE_INDEX/$CI_NODE_TOTAL" in run and "--fail-on CRASH,TIMEOUT" in run
    assert {j["variables"]["EP"] for j in shard_jobs.values()} == {"cpu", "openvino"}
    (merge_name,) = [k for k, v in doc.items() if isinstance(v, dict) and any("merge" in s for s in v.get("script", []))]
    merge = doc[merge_name]
    assert {n["job"] for n in merge["needs"]} == set(shard_jobs)
    assert all(n.get("artifacts") for n in merge["needs"])
    script = merge["script"]
    assert [i for i, s in enumerate(script) if "onnx-dml-bench merge" in s] < \
           [i for i, s in enumerate(script) if "onnx-dml-bench report" in s]
    assert merge["artifacts"]["reports"]["junit"] == "merged/junit.xml" and merge["when"] == "always"
    for job in (template, merge):
        assert job["stage"] in doc["stages"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gitlab_scripts_run_as_written(tmp_path):
    pytest.importorskip("onnxruntime")
    doc = gitlab()
    bin_dir = Path(sys.executable).parent
    exe = bin_dir / "onnx-dml-bench"
    if not exe.exists():
        pytest.skip(f"{exe} not installed")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "EP": "cpu"}
    shard = [s for s in doc[".bench-shard"]["script"] if "pip install" not in s]
    total = doc[".bench-shard"]["parallel"]
    for k in range(1, total + 1):
        for line in shard:
            res = subprocess.run(["bash", "-ec", line + SMALL], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=300, env={**env, "CI_NODE_INDEX": str(k), "CI_NODE_TOTAL": str(total)})
            assert res.returncode == 0, res.stdout + res.stderr
        assert (tmp_path / f"out/cpu-{k}/results.jsonl").is_file()
    merge_job = next(v for v in doc.values() if isinstance(v, dict) and "needs" in v)
    for line in merge_job["script"]:
        if "pip install" in line:
            continue
        res = subprocess.run(["bash", "-ec", line], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
    for f in ("results.jsonl", "report.html", "junit.xml", "summary.json"):
        assert (tmp_path / "merged" / f).is_file(), f


# ----------------------------------------------------------------------------------------------
# A lab's GPUs: the fleet examples (GitHub Actions, GitLab CI)
# ----------------------------------------------------------------------------------------------

def fleet_blocks() -> tuple[dict, dict]:
    (gh,) = [yaml.safe_load(b) for b in blocks("yaml") if "self-hosted" in b]
    (gl,) = [yaml.safe_load(b) for b in blocks("yaml") if "HOST:" in b]
    return gh, gl


def test_fleet_examples_structure():
    gh, gl = fleet_blocks()
    dev = gh["jobs"]["devices"]
    assert len(dev["strategy"]["matrix"]["host"]) >= 2 and dev["strategy"]["fail-fast"] is False
    assert "self-hosted" in dev["runs-on"] and "${{ matrix.host }}" in dev["runs-on"]
    run = next(s["run"] for s in dev["steps"] if "onnx-dml-bench run" in s.get("run", ""))
    assert "--devices all --same-cases" in run and "--fail-on CRASH,TIMEOUT" in run
    merge = gh["jobs"]["merge"]
    assert merge["needs"] == "devices" and merge["if"] == "always()"
    runs = [s.get("run", "") for s in merge["steps"]]
    i = next(k for k, r in enumerate(runs) if "merge" in r and "--fail-on DEVICE_DIFFERS" in r)
    assert any("onnx-dml-bench report" in r for r in runs[i + 1:])
    assert merge["steps"][[k for k, r in enumerate(runs) if "onnx-dml-bench report" in r][0]]["if"] == "always()"
    job = gl["gpu-devices"]
    assert job["parallel"]["matrix"][0]["HOST"] and "$HOST" in job["tags"] and "gpu" in job["tags"]
    assert any("--devices all --same-cases" in s for s in job["script"])
    fleet = gl["gpu-fleet"]
    assert fleet["needs"] == [{"job": "gpu-devices", "artifacts": True}] and fleet["when"] == "always"
    assert any("--fail-on DEVICE_DIFFERS" in s for s in fleet["script"])
    assert any("onnx-dml-bench report" in s for s in fleet["after_script"])
    for stage in (job["stage"], fleet["stage"]):
        assert stage in gl["stages"]


def _sh(line: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-ec", line], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("engine", ["github", "gitlab"])
def test_fleet_examples_run_as_written(tmp_path, engine):
    """Both hosts' jobs, then the fleet's, as the engine would run them: on the CPU EP made to list
    two devices per host (a test hook), the second host's GPU 1 answering with a bit flipped."""
    pytest.importorskip("onnxruntime")
    from onnx_dml_bench.lanes.base import DEVICE_FAULT_ENV, FAKE_DEVICES_ENV
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "onnx-dml-bench").exists():
        pytest.skip("onnx-dml-bench not installed")
    (tmp_path / ".venv").symlink_to(bin_dir.parent)           # the jobs' own .venv: this one
    gh, gl = fleet_blocks()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "EP": "cpu",
           FAKE_DEVICES_ENV: "2"}
    env.pop(DEVICE_FAULT_ENV, None)
    if engine == "github":
        hosts = gh["jobs"]["devices"]["strategy"]["matrix"]["host"]
        host_lines = [s["run"] for s in gh["jobs"]["devices"]["steps"] if "onnx-dml-bench run" in s.get("run", "")]
        fleet = [s["run"] for s in gh["jobs"]["merge"]["steps"] if "onnx-dml-bench" in s.get("run", "")]
    else:
        hosts = gl["gpu-devices"]["parallel"]["matrix"][0]["HOST"]
        host_lines = [s for s in gl["gpu-devices"]["script"] if "pip install" not in s]
        fleet = [s for s in gl["gpu-fleet"]["script"] + gl["gpu-fleet"]["after_script"] if "pip install" not in s]
    for k, host in enumerate(hosts):
        henv = {**env, "HOST": host, FAKE_DEVICES_ENV: f"2:{host}", **({DEVICE_FAULT_ENV: "1"} if k == 1 else {})}
        for line in host_lines:
            line = line.replace("${{ matrix.host }}", host) + " --profile smoke --op max_pooling2 --dtype FLOAT32 --no-report"
            res = _sh(line, tmp_path, henv)
            assert res.returncode == 0, res.stdout + res.stderr
        assert (tmp_path / f"out/{host}/results.jsonl").is_file()
    codes = []
    for line in fleet:
        res = _sh(line, tmp_path, env)
        codes.append(res.returncode)
        if "--fail-on DEVICE_DIFFERS" in line:
            assert res.returncode == 1, res.stdout + res.stderr
            assert "DEVICE_DIFFERS: device 1 (" in res.stdout and f"{hosts[1]}-cpu-1" in res.stdout
            assert res.stdout.count("DEVICE_DIFFERS: ") == 1          # the one GPU out of line, of four
    assert 1 in codes
    from onnx_dml_bench.results import read
    assert len(read(tmp_path / "rack" / "results.jsonl").envs) == 2 * len(hosts)
    for f in ("results.jsonl", "report.html", "junit.xml", "summary.json"):
        assert (tmp_path / "rack" / f).is_file(), f
    assert 'id="crossdevice"' in (tmp_path / "rack" / "report.html").read_text()
