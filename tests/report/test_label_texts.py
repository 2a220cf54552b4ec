"""Every label a record can carry comes with a text in the report's legend (never "-"): the labels
the comparison, the verdict path and the lanes write by name, each operator's open points and rules,
the known deviations, the findings, and every label of the committed samples' records."""
from __future__ import annotations

import gzip
import lzma
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import onnx_dml_bench
from onnx_dml_bench import compare, registry
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.record import FINDINGS
from onnx_dml_bench.report.data import label_legend

PKG = Path(onnx_dml_bench.__file__).parent
ROOT = PKG.parent


def _texts(label: str, op: str) -> dict:
    rec = SimpleNamespace(labels=[label], op=op, open_points=[])
    return label_legend([rec])[label]["texts"]


def _assert_has_text(label: str, op: str) -> None:
    texts = _texts(label, op)
    assert texts and all(t.strip() for t in texts.values()), f"{label} ({op}): no text in the legend"


def _literal_labels() -> set[str]:
    """The labels the package writes by name: ``labels.append("x")`` / ``labels = ["x"]`` and the
    module constants ``*_LABEL = "x"``."""
    out = set()
    for p in PKG.rglob("*.py"):
        src = p.read_text(encoding="utf-8")
        out |= set(re.findall(r"labels\.append\(\s*\"([^\"{}]+)\"\s*\)", src))
        out |= set(re.findall(r"^[A-Z_]+_LABEL\s*=\s*\"([^\"]+)\"", src, re.M))
    return out


def test_the_literal_label_scan_finds_the_known_ones():
    found = _literal_labels()
    assert {"shape", "signed-zero", "wrong-zeros", "no-kernel", "batch-rerun", "onnx-side-variant"} <= found


@pytest.mark.parametrize("label", sorted(_literal_labels()))
def test_every_label_written_by_name_has_a_text(label):
    _assert_has_text(label, "max_pooling2")


def test_every_comparison_label_has_a_text():
    src = (PKG / "compare.py").read_text(encoding="utf-8")
    written = set(re.findall(r"labels\.append\(\"([^\"]+)\"\)", src))
    assert written and written <= set(compare.LABEL_TEXT)


def test_every_open_point_rule_deviation_and_finding_has_a_text():
    for key, op in registry.OPERATORS.items():
        for point in op.open_point_texts:
            _assert_has_text(f"open-point:{point}", key)
            _assert_has_text(f"rule:{point}", key)
        for d in op.deviations():
            _assert_has_text(f"known-deviation:{d.key}", key)
    for rule in O.RULES:
        for key in ("max_pooling2", "average_pooling1"):
            _assert_has_text(f"rule:{rule}", key)
    for f in FINDINGS:
        _assert_has_text(f"finding:{f}", "max_pooling2")
    _assert_has_text("ep-took:nan-ignored", "max_pooling2")
    _assert_has_text("cpu-took:nan-ignored", "max_pooling2")


def _sample_labels() -> set[tuple[str, str]]:
    out = set()
    for p in sorted((ROOT / "reports").rglob("results.jsonl*")) + sorted((ROOT / "reports").rglob("*-*.jsonl.xz")):
        opener = {".gz": gzip.open, ".xz": lzma.open}.get(p.suffix, open)
        with opener(p, "rt", encoding="utf-8") as f:
            for line in f:
                if '"labels"' not in line:
                    continue
                d = json.loads(line)
                for lab in d.get("labels") or ():
                    out.add((lab, d.get("op", "")))
    return out


def test_every_label_of_the_committed_samples_has_a_text():
    labels = _sample_labels()
    assert len({lab for lab, _ in labels}) > 30
    missing = sorted({lab for lab, op in labels if not all(t.strip() for t in _texts(lab, op).values())
                      or not _texts(lab, op)})
    assert missing == []


def test_a_label_nobody_declared_has_no_text():
    """The check can fail: a label without a declaration gets no text."""
    assert _texts("made-up-label", "max_pooling2") == {}
    assert _texts("rule:made-up-rule", "max_pooling2") == {}
