"""Runs of one EP in two environments stay two environments: records are keyed by (case id,
environment identity) in a merge, in the report data (matrix, JUnit, summary), in ``compare`` and
in the four-way join.

The environments are real: the direct DirectML lane's default profile on DirectML.dll 1.15.4 and
1.15.2 (reports/dml-versions), same EP ``DirectML``, different ``versions["DirectML.dll"]``, and
the dml lane's run of the four-way sample (DirectML.dll 1.15.4)."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from onnx_dml_bench import results as R
from onnx_dml_bench.cli import main
from onnx_dml_bench.report import data as D
from onnx_dml_bench.report import fourway as FW
from onnx_dml_bench.report import junit, summary
from onnx_dml_bench.report.diff import compare

ROOT = Path(__file__).resolve().parent.parent
NEW = ROOT / "reports/dml-versions/direct-1.15.4/results.jsonl.xz"     # DirectML.dll 1.15.4.0
OLD = ROOT / "reports/dml-versions/direct-1.15.2/results.jsonl.xz"     # DirectML.dll 1.15.2.0
FOURWAY = ROOT / "reports/dml-lavapipe-fourway/results.jsonl.xz"        # dml and direct lanes, 1.15.4.0


def _dll(env) -> str:
    return env.versions["DirectML.dll"]


@pytest.fixture(scope="module")
def runs():
    new, old = R.read(NEW), R.read(OLD)
    assert {e.ep for e in new.envs + old.envs} == {"DirectML"}
    assert (_dll(new.envs[0]), _dll(old.envs[0])) == ("1.15.4.0", "1.15.2.0")
    assert new.envs[0].env_id != old.envs[0].env_id
    assert {r.case_id for r in new.records} == {r.case_id for r in old.records}
    return new, old


@pytest.fixture(scope="module")
def merged(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("merged") / "results.jsonl"
    assert main(["merge", str(out), str(NEW), str(OLD)]) == 0
    return out


def test_merge_keeps_both_environments_records(runs, merged):
    new, old = runs
    res = R.read(merged)
    assert len(res.envs) == 2
    per_env = Counter(r.env_id for r in res.records)
    assert per_env == {new.envs[0].env_id: len(new.records), old.envs[0].env_id: len(old.records)}
    # each environment's records as they were, the same case ids in both
    by_key = {R.record_key(r): r for r in res.records}
    for r in new.records + old.records:
        assert by_key[R.record_key(r)].verdict == r.verdict


def test_merge_of_a_merge_is_the_same(merged, tmp_path):
    again = tmp_path / "again.jsonl"
    assert main(["merge", str(again), str(merged), str(NEW)]) == 0
    assert len(R.read(again).records) == len(R.read(merged).records)


@pytest.mark.parametrize("source", ["merged", "two files"])
def test_report_data_counts_each_environment(runs, merged, source):
    new, old = runs
    res = D.load([merged] if source == "merged" else [NEW, OLD])
    assert len(res.records) == len(new.records) + len(old.records)
    lanes = Counter(res.lane(r) for r in res.records)
    assert lanes == {"DirectML (DirectML.dll 1.15.4.0)": len(new.records),
                     "DirectML (DirectML.dll 1.15.2.0)": len(old.records)}
    matrix = D.matrix(res.records, res.lane)
    assert {row["ep"] for row in matrix} == set(lanes)
    assert sum(row["total"] for row in matrix) == len(res.records)
    s = summary.build(res)
    assert s["total_cases"] == len(res.records)
    assert {m["ep"] for m in s["matrix"]} == set(lanes)
    assert len(s["environments"]) == 2
    suites = junit.build(res).findall("testsuite")
    assert sorted(int(x.get("tests")) for x in suites) == sorted([len(new.records), len(old.records)])
    assert {x.get("name") for x in suites} == {f"onnx-dml-bench.{lane}" for lane in lanes}


def test_report_command_on_two_environments(runs, merged, tmp_path):
    new, old = runs
    assert main(["report", str(merged), "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["total_cases"] == len(new.records) + len(old.records)
    assert sum(s["totals"].values()) == s["total_cases"]


def test_compare_matches_environment_to_environment(runs, merged):
    new, old = runs
    both = D.load([merged])
    cmp = compare(both, both)
    assert cmp.matched == len(both.records) and not cmp.new and not cmp.removed
    assert not cmp.regressions and not cmp.fixes and not cmp.other
    assert "DirectML.dll" in cmp.matching
    # one build against both: its own records match, the other build's are new
    cmp = compare(D.load([OLD]), both)
    assert cmp.matched == len(old.records)
    assert len(cmp.new) == len(new.records) and not cmp.removed
    assert {c["env_id"] for c in cmp.new} == {new.envs[0].env_id}
    # two builds each side, one verdict changed in one of them: one regression, in that environment
    assert cmp.totals_after == D.totals(both.records)


def test_compare_names_the_environment_of_a_regression(runs, merged, tmp_path):
    new, _ = runs
    victim = next(r for r in new.records if r.verdict == "PASS")
    lines = merged.read_text().splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        if d.get("case_id") == victim.case_id and d.get("env_id") == new.envs[0].env_id:
            d["verdict"], d["attribution"] = "FAIL", "EP_WRONG"
        out.append(json.dumps(d))
    cur = tmp_path / "cur.jsonl"
    cur.write_text("\n".join(out) + "\n")
    cmp = compare(D.load([merged]), D.load([cur]))
    assert [(c.case_id, c.ep) for c in cmp.regressions] == [(victim.case_id, "DirectML (DirectML.dll 1.15.4.0)")]
    assert cmp.matched == len(D.load([merged]).records)


def test_compare_of_one_environment_each_is_unchanged(runs):
    """Two single-build runs (the release compare of reports/dml-versions) match by case and EP."""
    new, old = runs
    cmp = compare(D.load([OLD]), D.load([NEW]))
    assert cmp.matched == len(new.records) and not cmp.new and not cmp.removed
    assert cmp.matching == "case id and EP"


def test_fourway_pairs_lanes_of_the_same_build(tmp_path):
    """The direct lane on two DirectML.dll builds, the dml lane on one: each dml record meets the
    direct record of its own build; the other build's direct records are direct-only."""
    fw = R.read(FOURWAY)
    old = R.read(OLD)
    envs, recs = R.combine([fw, old])
    direct_new = [r for r in fw.records if r.ep == FW.DIRECT_EP]
    dml = [r for r in fw.records if r.ep == FW.DML_EP]
    view = FW.join(recs, envs)
    assert len(view["rows"]) == len(dml)
    assert view["direct_only"] == len(direct_new) - len(dml) + len(old.records)
    assert {fw_.variant for fw_ in view["rows"]} == {"DirectML.dll 1.15.4.0"}
    direct_env = next(e.env_id for e in fw.envs if e.ep == FW.DIRECT_EP)
    assert {row.direct_env for row in view["rows"]} == {direct_env}
    # the same classes as the one-build four-way view of the sample
    alone = FW.join(fw.records, fw.envs)
    assert Counter(x.cls for x in view["rows"]) == Counter(x.cls for x in alone["rows"])
    lines = FW.lines(view)
    some = view["rows"][0]
    assert lines[(some.case_id, some.ep_env)].endswith("[DirectML.dll 1.15.4.0]")


def test_gzipped_merge_input(merged, tmp_path):
    gz = tmp_path / "m.jsonl.gz"
    gz.write_bytes(gzip.compress(merged.read_bytes()))
    assert len(R.read(gz).records) == len(R.read(merged).records)


def test_environment_keys_keep_one_order_whatever_the_hash_seed():
    """summary.json and the report list an environment's fields in one order, run after run: two
    interpreters with different string hashing write the same key order."""
    code = ("from onnx_dml_bench.record import Environment; "
            "print(','.join(Environment(ep='cpu', ort_version='1.0').flat()))")
    orders = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
              for seed in (1, 2, 3, 4)}
    assert len(orders) == 1, orders
