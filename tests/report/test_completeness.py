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
