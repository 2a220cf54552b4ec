"""The pytest plugin (onnx_dml_bench/conformance/plugin.py), run as a user runs it: pytest in a
subprocess, from a folder outside the project, on the CPU EP with a small selection
(max_pooling2, smoke profile, opsets 10 and 12: FAIL, PASS and NOT_EXPRESSIBLE cases)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--dml-bench-ep", "cpu", "--dml-bench-op", "max_pooling2", "--dml-bench-profile", "smoke",
         "--dml-bench-opset", "10,12", "--dml-bench-batch-size", "8"]
TARGET = ["--pyargs", "onnx_dml_bench.conformance"]


@lru_cache(maxsize=None)
def cases() -> tuple:
    from onnx_dml_bench import plan
    return tuple(plan.select_cases("smoke", ["max_pooling2"], [], "10,12", None))


def pytest_run(where: Path, *args, env: dict | None = None, timeout=600) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ONNX_DML_BENCH_FAULTS"))}
    e.update(env or {})
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfsx", *args], cwd=where, env=e,
                          capture_output=True, text=True, timeout=timeout)


def junit(path: Path) -> dict[str, tuple[str, str]]:
    """Node id -> (outcome, message) from pytest's JUnit XML (classname empty: name is the id)."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        name = ".".join(x for x in (tc.get("classname"), tc.get("name")) if x)
        kids = [k for k in tc if k.tag in ("failure", "error", "skipped")]
        if not kids:
            out[name] = ("passed", "")
        else:
            k = kids[0]
            kind = k.tag
            if kind == "skipped" and k.get("type") == "pytest.xfail":
                kind = "xfailed"
            # a long failure message is cut short in the attribute; the element text holds it whole
            out[name] = (kind, (k.text if kind == "failure" and k.text else k.get("message")) or "")
    return out


def records(folder: Path) -> dict:
    from onnx_dml_bench.results import read
    return {r.case_id: r for r in read(folder / ".dml-bench" / "results.jsonl").records}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """The small selection, serial, with -p no:cacheprovider and --pyargs from another folder."""
    where = tmp_path_factory.mktemp("elsewhere")
    res = pytest_run(where, *TARGET, *SMALL, "-p", "no:cacheprovider", "--junitxml", "junit.xml")
    return where, res


def test_inactive_without_ep(tmp_path):
    res = pytest_run(tmp_path, *TARGET)
    assert res.returncode == 5, res.stdout + res.stderr          # no tests collected
    assert "dml-bench" not in res.stdout


def test_one_item_per_case_ids_are_case_ids(serial):
    where, res = serial
    got = junit(where / "junit.xml")
    assert set(got) == {c.id for c in cases()}, res.stdout[-3000:]
    assert len(got) == len(cases()) == 60
    assert res.returncode == 1                      # failures among them
    assert not (where / ".pytest_cache").exists()   # -p no:cacheprovider


def test_outcomes_follow_verdicts(serial):
    where, res = serial
    got, recs = junit(where / "junit.xml"), records(where)
    assert set(recs) == set(got)
    verdicts = Counter(r.verdict for r in recs.values())
    assert verdicts["FAIL"] and verdicts["PASS"] and verdicts["NOT_EXPRESSIBLE"], verdicts
    for cid, rec in recs.items():
        outcome, msg = got[cid]
        if rec.verdict == "PASS":
            assert outcome == "passed", cid
        elif rec.verdict in ("FAIL", "EP_ERROR", "CRASH", "TIMEOUT", "ERROR"):
            assert outcome == "failure", (cid, outcome)
            assert msg.startswith(rec.verdict) and " ".join(rec.reason.split())[:60] in msg
            repro = re.search(r"repro: (\S+\.py)", msg).group(1)
            script = where / repro
            assert script.is_file() and cid in script.read_text(encoding="utf-8")
        else:
            assert outcome == "skipped", (cid, rec.verdict, outcome)
            assert msg.startswith(rec.verdict) and rec.reason.split()[0] in msg
    out = res.stdout
    assert re.search(r"\d+ failed, \d+ passed, \d+ skipped", out)


def test_environment_record_and_batches(serial):
    """One results file like `run` writes (environment first); the cases ran in the bench's
    batches of 8 (each session held its batch's runnable cases), not one session per item."""
    where, res = serial
    from onnx_dml_bench.results import read
    r = read(where / ".dml-bench" / "results.jsonl")
    assert len(r.envs) == 1 and r.envs[0].ep == "CPUExecutionProvider"
    assert r.envs[0].get("runner") == "pytest plugin" and r.envs[0].total_cases == 60
    sizes = Counter(x.timings.batch_size for x in r.records if x.timings.batch_size)
    assert max(sizes) == 8 and all(n % b == 0 for b, n in sizes.items()), sizes
    n_batches = -(-30 // 8) * 2                       # 30 cases per opset, batches of 8
    assert f"60 cases in {n_batches} batch(es)" in res.stdout, res.stdout[-2000:]


def test_xdist_same_outcomes_and_planted_crash(serial, tmp_path):
    pytest.importorskip("xdist")
    where, _ = serial
    ser = junit(where / "junit.xml")
    victim = sorted(k for k, v in ser.items() if v[0] == "passed")[-1]     # a crash costs only its case
    res = pytest_run(tmp_path, *TARGET, *SMALL, "-n", "2", "--junitxml", "junit.xml",
                     env={"ONNX_DML_BENCH_FAULTS": json.dumps({victim: "abort"})})
    par = junit(tmp_path / "junit.xml")
    assert par[victim][0] == "failure" and par[victim][1].startswith("CRASH"), par.get(victim)
    assert {k: v[0] for k, v in par.items() if k != victim} == \
           {k: v[0] for k, v in ser.items() if k != victim}, res.stdout[-3000:]
    recs = records(tmp_path)                          # the workers' results, merged into one file
    assert set(recs) == set(par)
    workers = {r.env_id for r in recs.values()}
    assert len(workers) == 1
    sizes = Counter(x.timings.batch_size for x in recs.values() if x.timings.batch_size)
    assert max(sizes) == 8 and all(n % b == 0 for b, n in sizes.items()), sizes


def test_keyword_selection_and_planted_crash_and_last_failed(serial, tmp_path):
    """-k selects; a case that aborts the EP's process is CRASH and fails alone (its batch
    mates keep their verdicts); --lf runs again what failed (node ids are stable)."""
    args = ["--dml-bench-ep", "cpu", "--dml-bench-op", "max_pooling2", "--dml-bench-profile", "smoke",
            "--dml-bench-batch-size", "8", "-k", "f32", "--junitxml", "junit.xml"]
    f32 = [c for c in cases() if c.opset == 12 and "f32" in c.id]
    before = records(serial[0])
    victim = next(c.id for c in f32 if before[c.id].verdict == "PASS")
    faults = json.dumps({victim: "abort"})
    res = pytest_run(tmp_path, *TARGET, *args, env={"ONNX_DML_BENCH_FAULTS": faults})
    got = junit(tmp_path / "junit.xml")
    assert set(got) == {c.id for c in f32}, res.stdout[-3000:]
    assert got[victim][0] == "failure" and got[victim][1].startswith("CRASH"), got[victim]
    failed = {k for k, v in got.items() if v[0] == "failure"}
    assert failed == {victim} | {c.id for c in f32 if before[c.id].verdict == "FAIL"}
    assert Counter(v[0] for v in got.values())["passed"] == len(f32) - len(failed)

    res = pytest_run(tmp_path, *TARGET, *args[:-2], "--lf", "--junitxml", "lf.xml")
    again = junit(tmp_path / "lf.xml")
    assert set(again) == failed, res.stdout[-2000:]
    assert again[victim][0] == "passed"              # no fault planted this time


def test_unsupported_as_xfail_and_expectations(serial, tmp_path):
    base = ["--dml-bench-ep", "cpu", "--dml-bench-op", "max_pooling2", "--dml-bench-profile", "smoke",
            "--dml-bench-opset", "10", "--dml-bench-dtype", "f32,i8"]
    ran = {k: r for k, r in records(serial[0]).items() if r.opset == 10 and r.dtype in ("FLOAT32", "INT8")}
    fail = next(r.case_id for r in ran.values() if r.verdict == "FAIL")
    passing = next(r.case_id for r in ran.values() if r.verdict == "PASS")
    ne = next(r.case_id for r in ran.values() if r.verdict == "NOT_EXPRESSIBLE")
    exp = tmp_path / "b" / "known.yaml"
    exp.parent.mkdir()
    exp.write_text("version: 1\nexpectations:\n"
                   f"  - cases: {fail}\n    verdict: FAIL\n    reason: NaN handling, see the report\n"
                   f"  - cases: {passing}\n    verdict: FAIL\n", encoding="utf-8")
    res = pytest_run(tmp_path / "b", *TARGET, *base, "--dml-bench-unsupported", "xfail",
                     "--dml-bench-expectations", "known.yaml", "--junitxml", "junit.xml")
    got = junit(tmp_path / "b" / "junit.xml")
    assert set(got) == set(ran), res.stdout[-2000:]
    assert got[fail][0] == "xfailed" and "NaN handling" in got[fail][1], got[fail]
    assert got[passing][0] == "failure" and "fixed, remove from expectations" in got[passing][1], got[passing]
    assert got[ne][0] == "xfailed" and got[ne][1].startswith("NOT_EXPRESSIBLE"), got[ne]
    assert "passed" not in {got[c][0] for c in got if ran[c].verdict != "PASS"}
    assert "fixed, remove from expectations" in res.stdout
    assert res.returncode == 1                        # the fixed case fails the run
    others = {c for c, r in ran.items() if r.verdict == "FAIL" and c != fail}
    assert all(got[c][0] == "failure" for c in others)


def test_bad_option_is_a_usage_error(tmp_path):
    res = pytest_run(tmp_path, *TARGET, "--dml-bench-ep", "cpu", "--dml-bench-op", "no_such_op")
    assert res.returncode == 4 and "no_such_op" in res.stderr + res.stdout


def test_docs_block_uses_real_options():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8").split("## pytest plugin", 1)[1]
    used = set(re.findall(r"--dml-bench-[a-z-]+", text))
    src = (ROOT / "onnx_dml_bench" / "conformance" / "plugin.py").read_text(encoding="utf-8")
    known = set(re.findall(r'addoption\("(--dml-bench-[a-z-]+)"', src))
    assert used and used <= known, used - known


def test_run_cases_called_once_per_run_not_per_item(tmp_path):
    """A plain run hands every batch to one ``execute.run_cases`` call (one pool of worker
    processes, one session per batch), however many items there are."""
    script = tmp_path / "spy.py"
    script.write_text(
        "import json, sys\n"
        "import pytest\n"
        "import onnx_dml_bench.execute as E\n"
        "calls = []\n"
        "real = E.run_cases\n"
        "def spy(cases, *a, **k):\n"
        "    calls.append(len(cases))\n"
        "    return real(cases, *a, **k)\n"
        "if __name__ == '__main__':       # the bench's worker processes are spawned: they import this\n"
        "    E.run_cases = spy\n"
        "    rc = pytest.main(sys.argv[1:])\n"
        "    print('RUN_CASES_CALLS', json.dumps(calls))\n", encoding="utf-8")
    res = subprocess.run([sys.executable, str(script), "-q", "-p", "no:cacheprovider", *TARGET,
                          "--dml-bench-ep", "cpu", "--dml-bench-op", "max_pooling2", "--dml-bench-profile", "smoke",
                          "--dml-bench-batch-size", "8"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    calls = json.loads(re.search(r"RUN_CASES_CALLS (\[.*\])", res.stdout).group(1))
    assert calls == [30], res.stdout[-2000:]
    sizes = Counter(r.timings.batch_size for r in records(tmp_path).values())
    assert sizes == {8: 24, 6: 6}, sizes
