"""Fuzzing: samples follow the operators' rules, a run is deterministic from its seed, and ONNX
Runtime's CPU EP yields at least one failure signature, shrunk and written as a case file."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from onnx_dml_bench import casefile, registry
from onnx_dml_bench.execute import RunConfig
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.triage.fuzz import FuzzError, parse_budget, samples, strategy_for, valid, write
from onnx_dml_bench.triage.fuzz import fuzz as run_fuzz
from onnx_dml_bench.triage.prober import Prober
from onnx_dml_bench.signature import signature


def _probe():
    return Prober(backend=resolve("cpu").make_backend(RunConfig()))


def test_samples_pass_the_operators_rules_and_rejections_are_counted():
    strategies = [strategy_for(registry.get(k)) for k in registry.names()]
    stats = Counter()
    cs = samples(strategies, np.random.default_rng(0), 300, stats)
    assert len(cs) == 300 and stats["sampled"] == 300 and stats["rejected"] > 0
    assert all(valid(c) for c in cs)
    assert {c.op for c in cs} == set(registry.names())
    # the draws vary what the sweep varies: geometry, ONNX-side options, opsets, families
    mp = [c for c in cs if c.op == "max_pooling2"]
    assert len({c.desc.WindowSize for c in mp}) > 3 and len({c.opset for c in mp}) > 1
    assert len({c.family for c in cs}) > 3 and any(c.variant for c in mp)


def test_same_seed_same_samples_other_seed_other_samples():
    strategies = [strategy_for(registry.get("max_pooling2"))]
    a = [c.id for c in samples(strategies, np.random.default_rng(7), 50, Counter())]
    b = [c.id for c in samples(strategies, np.random.default_rng(7), 50, Counter())]
    c = [c.id for c in samples(strategies, np.random.default_rng(8), 50, Counter())]
    assert a == b and a != c


def test_fuzz_is_deterministic_and_finds_a_cpu_signature(tmp_path):
    kw = dict(seed=3, budget_s=None, max_cases=120, ops=["max_pooling2"], batch_size=60, max_shrinks=1,
              max_elements=2**12)
    r1 = run_fuzz(_probe(), **kw)
    r2 = run_fuzz(_probe(), **kw)
    assert r1.case_ids == r2.case_ids and r1.cases == 120
    assert list(r1.signatures) == list(r2.signatures)
    assert {s: d["count"] for s, d in r1.signatures.items()} == {s: d["count"] for s, d in r2.signatures.items()}
    assert r1.signatures, "ONNX Runtime's CPU EP has known deviations: at least one signature expected"
    (s1, (sr1, _)), = r1.shrunk.items()
    (s2, (sr2, _)), = r2.shrunk.items()
    assert s1 == s2 and sr1.minimal.id == sr2.minimal.id
    assert signature(sr1.record) == s1
    doc = write(r1, tmp_path / "out")
    assert doc["cases"] == 120 and doc["signatures"][0]["new"] is True
    (shrunk,) = [row for row in doc["signatures"] if "shrunk" in row]
    loaded = casefile.load(tmp_path / "out" / shrunk["shrunk"])
    assert loaded[0].id == sr1.minimal.id
    assert [c.id for c in casefile.load(tmp_path / "out" / "cases.json")] == [sr1.minimal.id]
    assert "new signature" in r1.summary() and "120 cases" in r1.summary()


def test_baseline_signatures_are_not_new():
    kw = dict(seed=3, budget_s=None, max_cases=60, ops=["max_pooling2"], batch_size=60, max_shrinks=0,
              max_elements=2**12)
    r1 = run_fuzz(_probe(), **kw)
    assert r1.new()
    r2 = run_fuzz(_probe(), baseline=set(r1.signatures), **kw)
    assert r2.signatures and not r2.new()


def test_fuzz_command_writes_results_summary_and_shrunk_cases(tmp_path):
    from onnx_dml_bench.cli import main
    from onnx_dml_bench.results import read
    out = tmp_path / "fz"
    code = main(["fuzz", "--ep", "cpu", "--budget", "60s", "--seed", "5", "--op", "max_pooling2", "--max-cases", "64",
                 "--batch-size", "64", "--max-elements", "2^12", "--out", str(out)])
    assert code == 0
    doc = json.loads((out / "fuzz.json").read_text())
    assert doc["cases"] == 64 and doc["seed"] == 5 and doc["signatures"]
    res = read(out / "results.jsonl")
    assert res.envs[0].profile == "fuzz" and res.records
    assert all(r.verdict not in ("PASS",) for r in res.records)
    shrunk = [row for row in doc["signatures"] if "shrunk" in row]
    assert shrunk and (out / shrunk[0]["shrunk"]).is_file() and (out / "cases.json").is_file()
    # the shrunk case is named after a failing record of results.jsonl, so the report links it
    ids = {r.case_id for r in res.records}
    assert Path(shrunk[0]["shrunk"]).stem in ids
    assert (out / "report.html").is_file() and "shrunk case: " in (out / "junit.xml").read_text()


def test_sizes_are_log_uniform_up_to_the_limit():
    """Inputs grow to a total drawn log-uniformly between the drawn size and --max-elements: every
    order of magnitude up to the limit is sampled, nothing over it; the sweep's ranges alone stop
    at a few thousand elements."""
    import math
    strategies = [strategy_for(registry.get(k)) for k in registry.names()]
    small = samples(strategies, np.random.default_rng(1), 300, Counter())
    assert max(math.prod(c.desc.InputSizes) for c in small) < 2**14
    for limit in (2**26, 2**16):
        cs = samples(strategies, np.random.default_rng(1), 300, Counter(), max_elements=limit)
        sizes = [max(math.prod(s) for s in (*c.operator.input_shapes(c.desc).values(), c.operator.output_shape(c.desc)))
                 for c in cs]
        assert max(sizes) <= limit and all(valid(c, limit) for c in cs)
        octaves = Counter(int(math.log2(n) * 4 // math.log2(limit)) for n in sizes)     # quarters of log2(limit)
        assert set(octaves) >= {0, 1, 2, 3}, octaves
        assert max(sizes) > limit / 16
    # a round is cut by its samples' estimated memory
    few = samples(strategies, np.random.default_rng(2), 300, Counter(), max_elements=2**26, max_bytes=64 << 20)
    assert 1 <= len(few) < 300


def test_budget_parsing():
    assert parse_budget("10m") == 600 and parse_budget("90s") == 90 and parse_budget("1h") == 3600
    assert parse_budget("2.5") == 2.5
    with pytest.raises(FuzzError):
        parse_budget("ten minutes")
