"""Sharding then merging gives the same results as one unsharded run: the real command line runs
the MaxPool smoke cases on the CPU EP once whole and once as shards 1/3, 2/3 and 3/3; `merge`
joins the shards. Both results files are read as plain JSONL here."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[1]
N = 3
RUN = ["run", "--ep", "cpu", "--profile", "smoke", "--op", "max_pooling2", "--no-report",
       "--jobs", "1", "--fail-on", "CRASH,TIMEOUT"]
# Fields that depend on when, where or in which batch a case ran, not on its outcome.
VOLATILE = {"timings", "env_id"}


def bench(*args: str) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "onnx_dml_bench", *args], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, f"onnx-dml-bench {' '.join(args)} -> {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def read_jsonl(path: Path) -> tuple[list[dict], dict[str, dict]]:
    """(environment records, case id -> case record), with plain json line parsing."""
    envs, cases = [], {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("record") == "environment":
            envs.append(rec)
            continue
        assert rec["case_id"] not in cases, f"{path}:{i}: case {rec['case_id']} twice"
        cases[rec["case_id"]] = rec
    return envs, cases


def outcome(rec: dict) -> dict:
    out = {k: v for k, v in rec.items() if k not in VOLATILE}
    if out.get("runs"):            # how many cases shared the session depends on the batch too
        out["runs"] = {k: v for k, v in out["runs"].items() if k != "batch_size"}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    bench(*RUN, "--out", str(tmp / "whole"))
    shard_files = []
    for k in range(1, N + 1):
        bench(*RUN, "--shard", f"{k}/{N}", "--out", str(tmp / f"shard{k}"))
        shard_files.append(tmp / f"shard{k}" / "results.jsonl")
    merged = tmp / "merged" / "results.jsonl"
    bench("merge", str(merged), *map(str, shard_files))
    return {
        "whole": read_jsonl(tmp / "whole" / "results.jsonl"),
        "shards": [read_jsonl(f) for f in shard_files],
        "merged": read_jsonl(merged),
    }


def test_shards_are_disjoint_non_empty_and_cover_the_run(runs):
    _, whole = runs["whole"]
    shard_ids = [set(cases) for _, cases in runs["shards"]]
    assert len(whole) >= 2 * N, "too few cases for a meaningful split"
    assert all(shard_ids), [len(s) for s in shard_ids]
    for i in range(N):
        for j in range(i + 1, N):
            assert not shard_ids[i] & shard_ids[j], (i + 1, j + 1, sorted(shard_ids[i] & shard_ids[j]))
    assert set().union(*shard_ids) == set(whole)


def test_each_shard_records_its_slice(runs):
    for k, (envs, _) in enumerate(runs["shards"], 1):
        assert envs and all(e.get("shard") == f"{k}/{N}" for e in envs), [e.get("shard") for e in envs]


def test_merged_equals_unsharded(runs):
    _, whole = runs["whole"]
    _, merged = runs["merged"]
    assert set(merged) == set(whole)
    for cid, rec in whole.items():
        m = merged[cid]
        for key in ("verdict", "attribution", "outputs", "reason", "ep", "op", "dtype"):
            assert m.get(key) == rec.get(key), (cid, key, m.get(key), rec.get(key))
        assert outcome(m) == outcome(rec), cid


def test_merged_keeps_every_shard_environment(runs):
    envs, _ = runs["merged"]
    assert envs and all(e["ep"] == "CPUExecutionProvider" for e in envs)
    assert {e["env_id"] for e in envs} == {e["env_id"] for s_envs, _ in runs["shards"] for e in s_envs}


def test_the_comparison_is_not_vacuous(runs):
    """Every case has a verdict and the cases that ran carry compared outputs, so a shard that
    changed a verdict or an output statistic would show above."""
    _, whole = runs["whole"]
    assert all(r.get("verdict") for r in whole.values())
    ran = [r for r in whole.values() if r["verdict"] in ("PASS", "FAIL")]
    assert ran and all(r.get("outputs") for r in ran)
