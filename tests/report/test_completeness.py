"""A run cut off, or a shard left out, says so in every output (report banner, summary.json, JUnit,
compare page and text) and in the exit code of a gate (4); a whole run, whole shards merged and a
file of a bench that did not record its size are whole."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.results import completeness, read

SEL = ["--ep", "cpu", "--op", "space_to_depth1,depth_to_space1", "--profile", "smoke"]


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("full") / "run"
    assert main(["run", *SEL, "--out", str(out), "--no-report"]) in (0, 1)
    return out / "results.jsonl"


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("shards")
    out = []
    for k in (1, 2, 3):
        assert main(["run", *SEL, "--shard", f"{k}/3", "--out", str(base / f"s{k}"), "--no-report"]) in (0, 1)
        out.append(base / f"s{k}" / "results.jsonl")
    return out


def cut(src: Path, dst: Path, keep: int) -> Path:
    """The file as a run killed at a record boundary leaves it: the environment and ``keep`` records."""
    lines = src.read_text().splitlines(keepends=True)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(lines[:1 + keep]))
    return dst


def test_a_whole_run_is_whole(full, tmp_path, capsys):
    n = len(read(full).records)
    c = completeness([read(full)])
    assert c.complete and c.expected == n == c.found
    assert main(["report", str(full), "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["complete"] is True and s["expected_cases"] == n == s["total_cases"] and s["incomplete"] == []
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").iter("property")}
    assert props["complete"] == "true" and props["expected_cases"] == str(n)
    assert "Incomplete" not in (tmp_path / "report.html").read_text()


def test_a_cut_off_run_says_so_everywhere(full, tmp_path, capsys):
    n = len(read(full).records)
    part = cut(full, tmp_path / "cut" / "results.jsonl", 5)
    capsys.readouterr()
    assert main(["report", str(part), "--out", str(tmp_path / "rep")]) == 4
    err = capsys.readouterr().err
    assert f"5 of {n} cases" in err and "incomplete" in err
    s = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert s["complete"] is False and s["total_cases"] == 5 and s["expected_cases"] == n
    assert len(s["incomplete"]) == 1 and f"5 of {n}" in s["incomplete"][0]
    root = ET.parse(tmp_path / "rep" / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["complete"] == "false" and props["expected_cases"] == str(n) and f"5 of {n}" in props["incomplete"]
    # a CI system that reads only the JUnit totals sees it too: one error more than the cases
    assert root.get("tests") == "6" and int(root.get("errors")) >= 1
    err_case = [tc for tc in root.iter("testcase") if tc.find("error") is not None
                and tc.find("error").get("type") == "INCOMPLETE"]
    assert len(err_case) == 1
    html = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="incomplete"' in html and f"5 of {n} selected cases" in html and "(incomplete)" in html


def test_compare_against_a_cut_off_run(full, tmp_path, capsys):
    """The cut-off run once compared as "0 regressions" with the rest "removed", exit code 0."""
    n = len(read(full).records)
    part = cut(full, tmp_path / "cut" / "results.jsonl", 5)
    capsys.readouterr()
    assert main(["compare", str(full), str(part), "--out", str(tmp_path / "c")]) == 4
    text = capsys.readouterr().out
    assert "INCOMPLETE: the current run is not whole" in text and f"5 of {n} cases" in text
    assert "result: 0 regressions" in text and "INCOMPLETE (current not whole)" in text
    page = (tmp_path / "c" / "compare.html").read_text()
    assert 'id="incomplete-current"' in page and "(incomplete)" in page
    # the other way round: the baseline is the cut one
    assert main(["compare", str(part), str(full), "--out", str(tmp_path / "d")]) == 4
    assert "INCOMPLETE: the baseline run is not whole" in capsys.readouterr().out
    # a regression outranks it: exit code 1
    lines = full.read_text().splitlines(keepends=True)
    recs = [json.loads(x) for x in lines[1:]]
    i = next(i for i, r in enumerate(recs) if r["verdict"] == "PASS" and i < 5)
    recs[i]["verdict"], recs[i]["reason"] = "FAIL", "made a FAIL by the test"
    worse = tmp_path / "worse" / "results.jsonl"
    worse.parent.mkdir()
    worse.write_text(lines[0] + "".join(json.dumps(r) + "\n" for r in recs[:5]))
    assert main(["compare", str(full), str(worse), "--out", str(tmp_path / "e")]) == 1
    assert main(["compare", str(full), str(full), "--out", str(tmp_path / "f")]) == 0


def test_shards_merged_whole_and_with_one_missing(shards, full, tmp_path, capsys):
    n = len(read(full).records)
    assert main(["merge", str(tmp_path / "all.jsonl"), *map(str, shards)]) == 0
    c = completeness([read(tmp_path / "all.jsonl")])
    assert c.complete and c.expected == n == c.found
    assert main(["report", str(tmp_path / "all.jsonl"), "--out", str(tmp_path / "all")]) == 0
    # shard 3 left out (its job failed before uploading anything)
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "two.jsonl"), str(shards[0]), str(shards[1])]) == 0
    assert "shard 3/3 of the run is missing" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "two.jsonl"), "--out", str(tmp_path / "two")]) == 4
    s = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert s["complete"] is False and any("3/3" in x for x in s["incomplete"])
    # the shard files given to `report` directly: the same
    assert main(["report", str(shards[0]), str(shards[2]), "--out", str(tmp_path / "direct")]) == 4
    # one shard's own report is whole: it is what that job was asked for
    assert main(["report", str(shards[1]), "--out", str(tmp_path / "one")]) == 0
    # a shard cut off inside a merge
    short = cut(shards[2], tmp_path / "s3cut" / "results.jsonl", 1)
    assert main(["merge", str(tmp_path / "cutm.jsonl"), str(shards[0]), str(shards[1]), str(short)]) == 0
    c = completeness([read(tmp_path / "cutm.jsonl")])
    assert not c.complete and any("shard 3/3: 1 of" in x for x in c.missing)


def test_a_file_that_does_not_record_its_size_cannot_be_judged(full, tmp_path):
    lines = full.read_text().splitlines(keepends=True)
    env = json.loads(lines[0])
    del env["total_cases"]
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps(env) + "\n" + "".join(lines[1:4]))
    c = completeness([read(old)])
    assert c.complete and c.expected is None
    assert main(["report", str(old), "--out", str(tmp_path / "r")]) == 0


def test_a_resumed_run_is_judged_on_all_its_records(full, tmp_path):
    """`run --resume` appends an environment line: the run is still one run of its selection."""
    out = tmp_path / "run"
    part = cut(full, out / "results.jsonl", 3)
    assert not completeness([read(part)]).complete
    assert main(["run", *SEL, "--out", str(out), "--resume", "--no-report"]) in (0, 1)
    assert len(read(part).envs) == 2
    c = completeness([read(part)])
    assert c.complete and c.found == len(read(full).records)


def test_two_environments_of_one_selection_are_each_judged(full, tmp_path):
    """Two machines ran the same selection: one whole run does not make the other whole."""
    lines = full.read_text().splitlines(keepends=True)
    env = json.loads(lines[0])
    env["machine"], env["env_id"] = "other-machine", "other"
    recs = [json.loads(x) for x in lines[1:3]]
    for r in recs:
        r["env_id"] = "other"
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(env) + "\n" + "".join(json.dumps(r) + "\n" for r in recs))
    c = completeness([read(full), read(other)])
    assert not c.complete and len(c.missing) == 1


def test_two_whole_runs_of_different_selections_in_one_environment(full, tmp_path, capsys):
    """A run and a re-run of part of it (or two `--op`s) in one environment: two complete runs, read
    together by `report`, `merge` (and a report of the merge), `compare`, whole; one of them cut
    off is still incomplete, naming it (once "0 of 668 cases; the run was cut off", exit 4)."""
    other = tmp_path / "other"
    assert main(["run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke",
                 "--out", str(other), "--no-report"]) in (0, 1)
    two = [full, other / "results.jsonl"]
    reads = [read(p) for p in two]
    assert {e.env_id for r in reads for e in r.envs} == {reads[0].envs[0].env_id}     # one environment
    n = [len(r.records) for r in reads]
    c = completeness(reads)
    assert c.complete and c.expected == c.found == sum(n), c
    capsys.readouterr()
    assert main(["report", *map(str, two), "--out", str(tmp_path / "rep")]) == 0, capsys.readouterr().err
    assert main(["merge", str(tmp_path / "m" / "results.jsonl"), *map(str, two)]) == 0
    assert "incomplete" not in capsys.readouterr().err
    merged = read(tmp_path / "m" / "results.jsonl")
    assert sorted(e.get("found_cases") for e in merged.envs) == sorted(n)
    assert completeness([merged]).complete
    assert main(["report", str(tmp_path / "m" / "results.jsonl"), "--out", str(tmp_path / "m")]) == 0
    assert main(["compare", str(full), str(tmp_path / "m" / "results.jsonl")]) == 0
    # one of the two cut off: incomplete, read apart or merged
    part = cut(full, tmp_path / "cut" / "results.jsonl", 3)
    c = completeness([read(part), reads[1]])
    assert not c.complete and len(c.missing) == 1 and f"3 of {n[0]} cases" in c.missing[0]
    assert main(["merge", str(tmp_path / "m2.jsonl"), str(part), str(two[1])]) == 0
    assert f"3 of {n[0]} cases" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "m2.jsonl"), "--out", str(tmp_path / "r2")]) == 4
    # a merged file of two runs of one environment without the counts (a merge by another tool):
    # judged together, whole when its cases are at least the larger selection's
    m = [json.loads(x) for x in (tmp_path / "m" / "results.jsonl").read_text().splitlines()]
    for d in m:
        d.pop("found_cases", None)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(d) + "\n" for d in m))
    assert completeness([read(bare)]).complete
    few = [d for d in m if d.get("record") == "environment"] + [d for d in m if d.get("record") == "case"][:2]
    bare.write_text("".join(json.dumps(d) + "\n" for d in few))
    c = completeness([read(bare)])
    assert not c.complete and f"2 of at least {max(n)} cases of 2 runs in one environment" in c.missing[0]
