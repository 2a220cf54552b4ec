"""The pages inline our CSS and JavaScript without comments and idle whitespace (report/minify.py):
strings and regular expressions keep every character, tokens never run together, line breaks that
could end a statement stay."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from onnx_dml_bench.report.html import static
from onnx_dml_bench.report.minify import minify_css, minify_js

TEMPLATES = Path(__file__).resolve().parents[2] / "onnx_dml_bench" / "report" / "templates"
NODE = shutil.which("node")


@pytest.mark.parametrize("src, want", [
    ('var a = "x // not a comment"; // a comment\nvar b = 1;', 'var a="x // not a comment";var b=1;'),
    ("var s = 'a /* b */ c'; /* gone */ f(s);", "var s='a /* b */ c';f(s);"),
    ('var r = /\\/\\*[/]x/g, t = s.split(/\\s+/);', 'var r=/\\/\\*[/]x/g,t=s.split(/\\s+/);'),
    ("if (x) return /a b/.test(y);", "if(x)return/a b/.test(y);"),    # a regular expression after return
    ("var q = a / b / c;", "var q=a/b/c;"),
    ("x = a - -b; y = a + +b; z = a++ + b; w = x / /re/.source;",
     "x=a- -b;y=a+ +b;z=a++ +b;w=x/ /re/.source;"),
    ("var n = 1 .toString();", "var n=1 .toString();"),
    ("a = b\n(c)", "a=b\n(c)"),                 # no semicolon: the break is the program's, kept
    ("return\nx", "return\nx"),                 # "return;" then "x": kept so
    ("var a = 1\nvar b = 2", "var a=1\nvar b=2"),
    ("f(a,\n  b);\n  {\n  x;\n  }", "f(a,b);{x;}"),
    ("typeof x === 'undefined'", "typeof x==='undefined'"),
    ("p\n  .then(f)", "p.then(f)"),
    ('s = "\\u00d7 \\"q\\"";', 's="\\u00d7 \\"q\\"";'),
])
def test_minify_js(src, want):
    assert minify_js(src) == want


def test_minify_js_refuses_what_it_cannot_read():
    for bad in ('var s = "open', "/* open", "var r = /open\n/;"):
        with pytest.raises(ValueError):
            minify_js(bad)


@pytest.mark.parametrize("src, want", [
    ("a { color: red; }\n/* gone */\nb > c , d { margin: 0 auto ; }", "a{color:red}b>c,d{margin:0 auto}"),
    ('q::before { content: "a ; } /* b */"; }', 'q::before{content:"a ; } /* b */"}'),
    ("@media (max-width: 1000px) { .x :hover { a: b } }", "@media (max-width:1000px){.x :hover{a:b}}"),
    ("p { width: calc(100% - 10px); font: 14px/1.45 a, b; }", "p{width:calc(100% - 10px);font:14px/1.45 a,b}"),
])
def test_minify_css(src, want):
    assert minify_css(src) == want


def test_the_pages_assets_are_smaller_and_the_script_still_parses(tmp_path):
    js, css = str(static("report.js")), str(static("report.css"))
    assert len(js) < 0.8 * len((TEMPLATES / "report.js").read_text(encoding="utf-8"))
    assert len(css) < 0.9 * len((TEMPLATES / "report.css").read_text(encoding="utf-8"))
    assert "//" not in js.replace("://", "") or all(q in js for q in ('"', "'"))
    assert "/*" not in css and "/*" not in js
    assert "</script" not in js.lower() and "</style" not in css.lower()
    if NODE is None:
        pytest.skip("no node to parse the script")
    (tmp_path / "m.js").write_text(js, encoding="utf-8")
    r = subprocess.run([NODE, "--check", str(tmp_path / "m.js")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_template_lines_lose_their_indentation_and_no_line_is_preformatted():
    """The templates are read without their lines' indentation (report/html.py ``_Loader``): safe
    because no template line break falls inside a <pre>, a <textarea> or a pre-wrap element."""
    import re
    from onnx_dml_bench.report.html import dedent_markup, environment
    assert dedent_markup("<p>\n    a\n\t<b>x</b>\n</p>") == "<p>\na\n<b>x</b>\n</p>"
    for tpl in TEMPLATES.glob("*.j2"):
        text = tpl.read_text(encoding="utf-8")
        for m in re.finditer(r"<(pre|textarea)\b.*?</\1>", text, re.S):
            assert "\n" not in m.group(0), (tpl.name, m.group(0)[:80])
        for m in re.finditer(r'<(\w+)[^>]*class="[^"]*\bpre\b[^"]*"[^>]*>', text):
            tag = m.group(1)
            rest = text[m.end():]
            assert "\n" not in rest[:rest.index(f"</{tag}>")], (tpl.name, m.group(0))
        assert not re.search(r'="[^"\n]*\n', text), tpl.name          # no attribute value over two lines
    src = environment().loader.get_source(environment(), "report.html.j2")[0]
    assert not re.search(r"(?m)^[ \t]+<", src)
