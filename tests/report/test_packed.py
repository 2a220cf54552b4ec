"""A page's large blocks of markup stored compressed (report/packed.py): a small block stays markup, a
large one becomes base64 that cannot end its script element, the same bytes from run to run, and
unpacked() gives back exactly the markup; a compare page written so lists every row once unpacked."""
from __future__ import annotations

import re

from markupsafe import Markup

from onnx_dml_bench.cli import main
from onnx_dml_bench.report.packed import (PACK_MIN, PACKED_JS_TYPE, PACKED_TYPE, pack_markup, pack_script,
                                          unpacked)


def test_a_small_block_stays_markup_and_a_large_one_is_packed_and_comes_back_whole():
    small = Markup("<p>" + "x" * (PACK_MIN - 100) + "</p>")
    assert pack_markup(small) == small
    rows = Markup("".join(f'<tr data-case="c{i}"><td>caf\u00e9 &lt;b&gt; {i}</td></tr>\n' for i in range(2000)))
    packed = pack_markup(rows)
    assert packed.startswith(f'<script type="{PACKED_TYPE}" class="packed-html">') and len(packed) < len(rows) / 5
    body = re.search(r">(.*)</script>$", str(packed)).group(1)
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", body)                  # no "<": the element cannot end early
    assert pack_markup(rows) == packed                             # no time stamp in the gzip header
    page = "<body>" + str(packed) + "<p>after</p></body>"
    assert unpacked(page) == "<body>" + str(rows) + "<p>after</p></body>"


def test_a_packed_script_comes_back_as_a_script_element():
    js = "window.x = 1;\n" * 500
    el = pack_script(js)
    assert el.startswith(f'<script type="{PACKED_JS_TYPE}"') and len(el) < len(js) / 5
    assert unpacked("<body>" + str(el) + "</body>") == "<body><script>" + js + "</script></body>"


def test_a_compare_page_with_many_rows_lists_each_once_unpacked(tmp_path):
    """The rows of a compare page's tables lie in packed blocks; unpacked, every changed case is a row."""
    import json
    env = {"record": "environment", "schema": "onnx-dml-bench/result/2", "ep": "CPUExecutionProvider",
           "optimization": "disabled", "env_id": "e1"}

    def rec(i, verdict):
        return {"record": "case", "case_id": f"mp2-f32-c{i:05d}", "op": "max_pooling2",
                "dml_op": "DML_MAX_POOLING2_OPERATOR_DESC", "dtype": "FLOAT32", "opset": 12, "family": "random",
                "seed": i, "descriptor": {"InputSizes": [1, 1, 2, 2]}, "ep": "CPUExecutionProvider",
                "verdict": verdict, "env_id": "e1", "reason": f"Y: 1/4 differ, case {i}" if verdict == "FAIL" else ""}
    n = 400
    base, cur = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    base.write_text("\n".join(json.dumps(x) for x in [env] + [rec(i, "PASS") for i in range(n)]) + "\n")
    cur.write_text("\n".join(json.dumps(x) for x in [env] + [rec(i, "FAIL") for i in range(n)]) + "\n")
    assert main(["compare", str(base), str(cur), "--out", str(tmp_path / "c.html")]) == 1
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert PACKED_TYPE in page and 'data-case="mp2-f32-c00007"' not in page
    shown = unpacked(page)
    for i in range(n):
        assert shown.count(f'<tr data-case="mp2-f32-c{i:05d}">') == 1, i
