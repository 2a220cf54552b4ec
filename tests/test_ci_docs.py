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
