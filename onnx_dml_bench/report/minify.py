"""Our own CSS and JavaScript, made smaller as a page inlines them: comments and the whitespace that
separates nothing are left out, nothing else (no name is changed, no statement moved). Every report
page carries its own copy of both (the pages are self-contained), so this is most of the weight of
a small run's page.

Both steps read the text as tokens, so a string, a regular expression literal or a CSS string keeps
every character: ``"a // b"`` and ``/\\/\\*/`` are not comments. JavaScript keeps a line break
wherever one could end a statement (automatic semicolon insertion sees the same breaks), and a space
wherever two tokens would otherwise run into one (``a - -b``, ``x / /re/``, ``1 .toString``).
"""
from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z0-9_$\\\u0080-\uffff]")
#: a "/" after one of these characters (or at the start) begins a regular expression, not a division
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^")
#: ... and after one of these words
_REGEX_KEYWORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
                   "instanceof", "yield", "await"}
#: a line break after one of these characters, or before one of the second set, ends no statement
_NO_BREAK_AFTER = set("{([,;")
_NO_BREAK_BEFORE = set("})].,;")


def _word(c: str) -> bool:
    return bool(c) and bool(_WORD.match(c))


def _needs_space(prev: str, nxt: str) -> bool:
    """Whether two tokens, ``prev`` ending and ``nxt`` beginning with these characters, need a space
    between them to stay two tokens of the same meaning."""
    if _word(prev) and _word(nxt):
        return True
    if prev == nxt and prev in "+-":            # a - -b, a + +b
        return True
    if prev == "/" and nxt in "/*":             # x / /re/
        return True
    if prev.isdigit() and nxt == ".":           # 1 .toString()
        return True
    return False


def minify_js(src: str) -> str:
    """``src`` without comments and without the whitespace no token needs (see the module)."""
    out: list[str] = []
    last_word = ""        # the last identifier or keyword written (regular expression or division?)
    last = ""             # the last character written that is not whitespace
    pending = ""          # whitespace seen since: "", " " or "\n"
    i, n = 0, len(src)

    def emit(tok: str) -> None:
        nonlocal pending, last
        if pending:
            if pending == "\n" and last and last not in _NO_BREAK_AFTER and tok[0] not in _NO_BREAK_BEFORE:
                out.append("\n")
            elif _needs_space(last, tok[0]):
                out.append(" ")
        pending = ""
        out.append(tok)
        last = tok[-1]

    def space(kind: str) -> None:
        nonlocal pending
        if kind == "\n" or not pending:
            pending = kind

    while i < n:
        c = src[i]
        if c in " \t\r\n\f\v":
            space("\n" if c in "\r\n" else " ")
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j              # the line break itself is whitespace
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise ValueError("an unterminated comment")
            space("\n" if "\n" in src[i:j] else " ")
            i = j + 2
        elif c in "'\"`":
            j = i + 1
            while j < n and src[j] != c:
                if src[j] == "\\":
                    j += 1
                elif src[j] == "\n" and c != "`":
                    raise ValueError(f"an unterminated string at {i}")
                j += 1
            if j >= n:
                raise ValueError(f"an unterminated string at {i}")
            emit(src[i:j + 1])
            last_word = ""
            i = j + 1
        elif c == "/" and (not last or last in _REGEX_AFTER or (_word(last) and last_word in _REGEX_KEYWORDS)):
            j, in_class = i + 1, False
            while j < n and (in_class or src[j] != "/"):
                if src[j] == "\\":
                    j += 1
                elif src[j] == "[":
                    in_class = True
                elif src[j] == "]":
                    in_class = False
                elif src[j] == "\n":
                    raise ValueError(f"an unterminated regular expression at {i}")
                j += 1
            j += 1
            while j < n and _word(src[j]):       # flags
                j += 1
            emit(src[i:j])
            last_word = ""
            i = j
        elif _word(c):
            j = i + 1
            while j < n and _word(src[j]):
                j += 1
            last_word = src[i:j]
            emit(last_word)
            i = j
        else:
            emit(c)
            last_word = ""
            i += 1
    return "".join(out)


_CSS_TOKEN = re.compile(r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|(/\*.*?\*/)|(\s+)|([^"'/\s]+|/)""", re.S)
#: no space is needed next to these characters in CSS, nor after a ":" (a space before one is kept:
#: "a :hover" is not "a:hover"; nor before a "(": "and (max-width" is not a function)
_CSS_TIGHT = set("{};,>")


def minify_css(src: str) -> str:
    """``src`` without comments, without the whitespace around ``{ } ; , >`` and after ``:``, and
    without the ``;`` that ends a block's last declaration (strings kept as they are)."""
    out: list[str] = []
    pending = False
    for m in _CSS_TOKEN.finditer(src):
        string, comment, ws, other = m.groups()
        if comment is not None or ws is not None:
            pending = True
            continue
        tok = string if string is not None else other.replace(";}", "}")
        if string is None and tok[0] == "}" and out and out[-1] == ";":
            out.pop()
        prev = out[-1][-1] if out else ""
        if pending and prev and prev not in _CSS_TIGHT and prev != ":" and tok[0] not in _CSS_TIGHT:
            out.append(" ")
        pending = False
        if string is None and tok[-1] == ";" and len(tok) > 1:
            out.append(tok[:-1])
            tok = ";"
        out.append(tok)
    return "".join(out)
