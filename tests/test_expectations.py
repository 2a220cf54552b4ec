"""Expectations files: loading (and one-line errors for malformed files), classification of a
run's records into expected / unexpected / fixed / changed / stale with the exit-code policy, and
writing a file from a run that reads back to classify the same run as all expected."""
from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from onnx_dml_bench.expectations import EXIT_POLICY, ExpectationsError, load, parse, write

DML = "DmlExecutionProvider"
FAIL_ON = ("FAIL", "CRASH", "TIMEOUT")


def rec(case_id, verdict, ep=DML, op="max_pooling2", dtype="INT8", attribution=None, reason=""):
    return SimpleNamespace(case_id=case_id, ep=ep, op=op, dtype=dtype, verdict=verdict,
                           attribution=attribution, reason=reason)


def write_text(tmp_path, text, name="exp.yaml"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return f


EXAMPLE = """\
    version: 1
    ep: DmlExecutionProvider
    expectations:
      - cases: "mp2-i8-*"
        verdict: FAIL
        reason: "int8 ties"
        link: https://example.org/issue/1
      - cases: [avp-f16-a, avp-f16-b]
        verdict: [FAIL, CRASH]
      - cases: roi-f32-gone
        verdict: TIMEOUT
"""


@pytest.fixture
def example(tmp_path):
    return load(write_text(tmp_path, EXAMPLE))


def ids(matches):
    return sorted(m.case_id for m in matches)


def test_load_reads_entries(example):
    assert example.ep == DML and len(example.entries) == 3
    e0, e1, _ = example.entries
    assert e0.cases == ("mp2-i8-*",) and e0.verdicts == {"FAIL"} and e0.reason == "int8 ties"
    assert e0.link == "https://example.org/issue/1"
    assert e1.cases == ("avp-f16-a", "avp-f16-b") and e1.verdicts == {"FAIL", "CRASH"} and e1.reason == ""


def test_classify_separates_every_kind(example):
    records = [
        rec("mp2-i8-1", "FAIL"),                  # glob, expected
        rec("mp2-i8-2", "PASS"),                  # glob, now passes: fixed
        rec("mp2-i8-3", "CRASH"),                 # glob expects FAIL only: a new failure mode
        rec("mp2-i8-4", "NOT_OFFLOADED"),         # glob, another verdict outside fail_on: changed
        rec("avp-f16-a", "CRASH"),                # list of verdicts, expected
        rec("avp-f16-b", "FAIL"),                 # expected
        rec("s2d-f32-new", "FAIL"),               # no entry: unexpected
        rec("s2d-f32-ok", "PASS"),                # no entry, passes
        rec("s2d-f32-rej", "EP_REJECTED"),        # no entry, not in fail_on
        rec("mp2-i8-9", "FAIL", ep="CPUExecutionProvider"),   # another EP: out of the file's scope
        rec("roi-f32-ok", "PASS"),                # roi_pooling ran: its entries are in scope
    ]
    c = example.classify(records, FAIL_ON)
    assert ids(c.expected) == ["avp-f16-a", "avp-f16-b", "mp2-i8-1"]
    assert ids(c.unexpected) == ["mp2-i8-3", "mp2-i8-9", "s2d-f32-new"]     # another EP's failure too
    assert ids(c.fixed) == ["mp2-i8-2"]
    assert ids(c.changed) == ["mp2-i8-4"]
    assert [e.cases for e in c.stale] == [("roi-f32-gone",)]
    assert c.passing == 3 and c.out_of_scope == 1
    assert c.exit_code == 1
    text = "\n".join(c.summary_lines())
    assert "3 expected, 3 unexpected, 1 fixed, 1 changed, 1 stale" in text
    assert "1 records of CPUExecutionProvider, which the file (ep: DmlExecutionProvider) does not cover" in text
    assert "fixed, remove from expectations:" in text and "mp2-i8-2" in text
    assert "s2d-f32-new: FAIL" in text and "roi-f32-gone" in text
    assert EXIT_POLICY in text


def test_stale_entries_are_scoped_to_the_operators_run(example):
    """Entries of an operator the run did not touch are not stale (a one-operator run hears nothing
    of the others); a glob in the operator's place may match anything: in scope."""
    c = example.classify([rec("mp2-i8-1", "FAIL")], FAIL_ON)
    assert [e.cases for e in c.stale] == [] and [e.cases for e in c.unscoped] == [("avp-f16-a", "avp-f16-b"),
                                                                                 ("roi-f32-gone",)]
    assert "3 entries" not in "\n".join(c.summary_lines()) and "2 entries concern operators" in "\n".join(c.summary_lines())
    glob = parse({"version": 1, "expectations": [{"cases": "*-f16-*", "verdict": "FAIL"}]})
    assert len(glob.classify([rec("mp2-i8-1", "FAIL")], FAIL_ON).stale) == 1


def test_the_shipped_cpu_file_on_one_operator_names_only_its_entries():
    shipped = load(Path(__file__).resolve().parents[1] / "expectations" / "cpu.yaml")
    c = shipped.classify([rec("s2d-f32-x", "PASS", ep="CPUExecutionProvider")], FAIL_ON)
    assert c.unscoped and all(p.startswith("s2d-") for e in c.stale for p in e.cases)


@pytest.mark.parametrize("records, code", [
    ([rec("mp2-i8-1", "FAIL"), rec("x", "PASS")], 0),                      # only expected failures
    ([rec("mp2-i8-1", "FAIL"), rec("new", "TIMEOUT")], 1),                 # unexpected
    ([rec("mp2-i8-1", "PASS")], 1),                                        # fixed fails too (policy)
    ([rec("mp2-i8-1", "FAIL")], 0),                                        # stale entries do not fail
    ([rec("mp2-i8-1", "ERROR")], 0),                                       # changed, ERROR not in fail_on
])
def test_exit_code_policy(example, records, code):
    assert example.classify(records, FAIL_ON).exit_code == code


def test_fail_on_decides_what_is_unexpected(example):
    records = [rec("new", "ERROR"), rec("mp2-i8-1", "ERROR")]
    assert example.classify(records, FAIL_ON).exit_code == 0
    c = example.classify(records, ("FAIL", "ERROR"))
    assert ids(c.unexpected) == ["mp2-i8-1", "new"] and c.exit_code == 1
    with pytest.raises(ValueError, match="MAYBE"):
        example.classify(records, ("MAYBE",))


def test_exact_id_beats_a_glob_listed_earlier(tmp_path):
    exp = load(write_text(tmp_path, """\
        version: 1
        expectations:
          - cases: "mp2-*"
            verdict: FAIL
          - cases: mp2-special
            verdict: CRASH
    """))
    c = exp.classify([rec("mp2-special", "CRASH"), rec("mp2-other", "FAIL")], FAIL_ON)
    assert ids(c.expected) == ["mp2-other", "mp2-special"] and not c.stale


def test_without_ep_entries_apply_to_every_ep(tmp_path):
    exp = load(write_text(tmp_path, "version: 1\nexpectations:\n  - {cases: a, verdict: FAIL}\n"))
    c = exp.classify([rec("a", "FAIL", ep="X"), rec("a", "FAIL", ep="Y")], FAIL_ON)
    assert len(c.expected) == 2 and c.out_of_scope == 0


def test_records_may_be_mappings(example):
    c = example.classify([{"case_id": "mp2-i8-1", "ep": DML, "verdict": "FAIL"}], FAIL_ON)
    assert ids(c.expected) == ["mp2-i8-1"]


@pytest.mark.parametrize("text, where", [
    ("- 1\n", "must be a mapping"),
    ("version: 2\nexpectations: []\n", "version: must be 1"),
    ("version: 1\nexpectation: []\n", "unknown key(s) expectation"),
    ("version: 1\nep: 3\nexpectations: []\n", "ep: must be"),
    ("version: 1\nexpectations: {a: 1}\n", "expectations: must be a list"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: FAIL}\n  - oops\n", "expectations[1]: must be a mapping"),
    ("version: 1\nexpectations:\n  - {verdict: FAIL}\n", "expectations[0].cases: missing"),
    ("version: 1\nexpectations:\n  - {cases: a}\n", "expectations[0].verdict: missing"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: FIAL}\n", "expectations[0].verdict: unknown verdict 'FIAL'"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: []}\n", "expectations[0].verdict: must be"),
    ("version: 1\nexpectations:\n  - {cases: [a, 3], verdict: FAIL}\n", "expectations[0].cases[1]: must be a non-empty string"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: FAIL, reasons: x}\n", "expectations[0].reasons: unknown field"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: FAIL, link: [x]}\n", "expectations[0].link: must be a string"),
    ("version: 1\nexpectations:\n  - {cases: a, verdict: FAIL}\n  - {cases: [b, a], verdict: CRASH}\n",
     "expectations[1].cases: 'a' is already listed in expectations[0]"),
    ("version: 1\nexpectations:\n  - cases: [a\n", "not valid YAML"),
])
def test_malformed_file_gives_one_line_naming_file_entry_and_field(tmp_path, text, where):
    f = write_text(tmp_path, text, "bad.yaml")
    with pytest.raises(ExpectationsError) as e:
        load(f)
    msg = str(e.value)
    assert "\n" not in msg, msg
    assert msg.startswith(str(f)), msg
    assert where in msg, msg
    assert isinstance(e.value, ValueError)


def test_missing_file_is_an_expectations_error(tmp_path):
    with pytest.raises(ExpectationsError, match="cannot read"):
        load(tmp_path / "nope.yaml")


RUN = [
    rec("mp2-i8-b", "FAIL", attribution="EP_WRONG", reason="Indices: 3/9 differ [tie-order]\nsecond line"),
    rec("mp2-i8-a", "CRASH", reason="worker died " + "x" * 500),
    rec("mp2-f32-a", "PASS"),
    rec("avp-f16-a", "TIMEOUT", op="average_pooling1", dtype="FLOAT16"),
    rec("avp-f16-b", "EP_REJECTED", op="average_pooling1", dtype="FLOAT16", reason="refused"),
    rec("s2d-u8-a", "FAIL", op="space_to_depth1", dtype="UINT8", attribution="REFERENCE_DISPUTED"),
]


def test_write_then_load_classifies_the_same_run_as_expected(tmp_path):
    f = tmp_path / "sub" / "known.yaml"
    assert write(RUN, f, FAIL_ON, reason="seen in the nightly run") == 4
    exp = load(f)
    c = exp.classify(RUN, FAIL_ON)
    assert not c.unexpected and not c.fixed and not c.stale and not c.changed
    assert ids(c.expected) == ["avp-f16-a", "mp2-i8-a", "mp2-i8-b", "s2d-u8-a"]
    assert c.exit_code == 0
    # ... and a later run where one case is fixed and one regressed is caught
    later = [rec("mp2-i8-b", "PASS"), rec("mp2-f32-a", "FAIL")] + [r for r in RUN if r.case_id not in ("mp2-i8-b", "mp2-f32-a")]
    c2 = exp.classify(later, FAIL_ON)
    assert ids(c2.fixed) == ["mp2-i8-b"] and ids(c2.unexpected) == ["mp2-f32-a"] and c2.exit_code == 1


def test_written_file_is_readable_sorted_and_exact(tmp_path):
    f = tmp_path / "known.yaml"
    write(RUN, f, FAIL_ON, reason="seen in the nightly run", link="https://example.org/1")
    text = f.read_text()
    data = yaml.safe_load(text)
    assert data["version"] == 1 and data["ep"] == DML
    entries = data["expectations"]
    assert [e["cases"] for e in entries] == ["avp-f16-a", "mp2-i8-a", "mp2-i8-b", "s2d-u8-a"]   # op, dtype, verdict, id
    assert all(not set("*?[") & set(e["cases"]) for e in entries)                               # exact ids
    assert [e["verdict"] for e in entries] == ["TIMEOUT", "CRASH", "FAIL", "FAIL"]
    by = {e["cases"]: e for e in entries}
    assert by["mp2-i8-b"]["reason"] == "EP_WRONG: Indices: 3/9 differ [tie-order] second line"
    assert by["avp-f16-a"]["reason"] == "seen in the nightly run"
    assert len(by["mp2-i8-a"]["reason"]) <= 200 and by["mp2-i8-a"]["reason"].endswith("...")
    assert all(e["link"] == "https://example.org/1" for e in entries)
    headers = [line.strip() for line in text.splitlines() if line.strip().startswith("# ---")]
    assert headers == ["# --- average_pooling1 / FLOAT16 / TIMEOUT ---", "# --- max_pooling2 / INT8 / CRASH ---",
                       "# --- max_pooling2 / INT8 / FAIL ---", "# --- space_to_depth1 / UINT8 / FAIL ---"]


def test_written_file_is_the_same_whatever_order_the_verdicts_come_in(tmp_path):
    """`expectations --fail-on` hands a set: the file names its verdicts in report order, so
    rewriting a shipped file from the same runs changes nothing."""
    texts = set()
    for i, order in enumerate((["TIMEOUT", "CRASH", "FAIL"], ["FAIL", "TIMEOUT", "CRASH"], {"CRASH", "FAIL", "TIMEOUT"})):
        write(RUN, tmp_path / f"k{i}.yaml", order)
        texts.add((tmp_path / f"k{i}.yaml").read_text())
    assert len(texts) == 1 and "with a verdict in FAIL,CRASH,TIMEOUT." in texts.pop()


def test_write_with_nothing_failing_gives_an_empty_valid_file(tmp_path):
    f = tmp_path / "none.yaml"
    assert write([rec("a", "PASS")], f, FAIL_ON) == 0
    assert load(f).entries == []


def test_write_refuses_mixed_eps_unless_one_is_picked(tmp_path):
    mixed = RUN + [rec("mp2-i8-b", "FAIL", ep="CPUExecutionProvider")]
    with pytest.raises(ValueError, match="several EPs"):
        write(mixed, tmp_path / "x.yaml", FAIL_ON)
    assert write(mixed, tmp_path / "cpu.yaml", FAIL_ON, ep="CPUExecutionProvider") == 1
    assert load(tmp_path / "cpu.yaml").ep == "CPUExecutionProvider"


def test_parse_accepts_data_already_read():
    exp = parse({"version": 1, "expectations": [{"cases": "a", "verdict": "FAIL"}]}, "inline")
    assert exp.entries[0].cases == ("a",) and exp.path is None


def test_another_eps_expectations_never_turn_a_gate_green(tmp_path, capsys):
    """A file written for the DML EP, given to a CPU run: refused before anything runs (one line,
    exit 2); given to `judge` of another EP, the same; and classified anyway, the other EP's
    failures are unexpected, never "as expected"."""
    import json

    from onnx_dml_bench.cli import main
    f = write_text(tmp_path, f"version: 1\nep: {DML}\nexpectations:\n  - cases: '*'\n    verdict: [FAIL, EP_ERROR]\n")
    capsys.readouterr()
    code = main(["run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--expectations", str(f),
                 "--out", str(tmp_path / "r"), "--no-report"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and str(f) in lines[0] and DML in lines[0], err
    assert "CPUExecutionProvider" in lines[0] and not (tmp_path / "r" / "results.jsonl").exists()
    cases = tmp_path / "one.json"
    cases.write_text(json.dumps({"cases": [{"op": "space_to_depth1", "descriptor": {
        "InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "BlockSize": 2}}]}))
    (tmp_path / "outs").mkdir()
    code = main(["judge", "--cases", str(cases), "--outputs", str(tmp_path / "outs"), "--ep", "cpu",
                 "--expectations", str(f), "--out", str(tmp_path / "j"), "--no-report"])
    assert code == 2 and DML in capsys.readouterr().err
    c = load(f).classify([rec("a", "FAIL", ep="CPUExecutionProvider"), rec("b", "EP_ERROR", ep="CPUExecutionProvider"),
                          rec("c", "PASS", ep="CPUExecutionProvider")], FAIL_ON + ("EP_ERROR",))
    assert ids(c.unexpected) == ["a", "b"] and not c.expected and c.out_of_scope == 3 and c.exit_code == 1
