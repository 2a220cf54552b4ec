"""Large blocks of a page's markup stored compressed: a table of thousands of rows is text that
gzip makes 10 to 20 times smaller, and a page is opened far more often from a folder of samples or
an artifact store than it is read without a browser. A block of at least PACK_MIN bytes becomes
a ``<script type="text/x-packed-html">`` element holding its gzip+base64 (no script runs from it);
the page's ``unpack.js`` puts the markup back in its place as the page opens, offline
(DecompressionStream), and then scrolls to the fragment of the address. A smaller block stays as it
is. A page's own script may be stored so too (``<script type="text/x-packed-js">``: a third of its
size), and runs once the markup is in place. :func:`unpacked` gives a page as a browser runs it, for
tests and tools."""
from __future__ import annotations

import base64
import gzip
import re
import struct
import zlib

from markupsafe import Markup

__all__ = ["PACK_MIN", "PACKED_TYPE", "PACKED_JS_TYPE", "pack_markup", "pack_script", "unpacked", "gzip_bytes", "GZIP_HEADER",
           "gzip_trailer"]

#: blocks smaller than this stay as markup (the loader's few hundred bytes would not pay back)
PACK_MIN = 8 << 10
PACKED_TYPE = "text/x-packed-html"
PACKED_JS_TYPE = "text/x-packed-js"
_PACKED = re.compile(r'<script type="' + re.escape(PACKED_TYPE) + r'"[^>]*>([A-Za-z0-9+/=\s]*)</script>')
_PACKED_JS = re.compile(r'<script type="' + re.escape(PACKED_JS_TYPE) + r'"[^>]*>([A-Za-z0-9+/=\s]*)</script>')


#: a gzip header without name and with mtime 0 (deflate at level 9): the same page from run to run
GZIP_HEADER = b"\x1f\x8b\x08\x00" + struct.pack("<L", 0) + b"\x02\xff"


def gzip_trailer(crc: int, size: int) -> bytes:
    """The end of a gzip stream of ``size`` bytes whose CRC-32 is ``crc``."""
    return struct.pack("<LL", crc, size & 0xFFFFFFFF)


def gzip_bytes(raw: bytes) -> bytes:
    """``raw`` gzipped at level 9 with no name and mtime 0: the same bytes from run to run."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    return GZIP_HEADER + deflate.compress(raw) + deflate.flush() + gzip_trailer(zlib.crc32(raw), len(raw))


def pack_markup(markup) -> Markup:
    """``markup`` (already escaped: a Jinja block under autoescape) packed when it is PACK_MIN bytes
    or more. A template uses it as ``{% filter packed %} ... {% endfilter %}`` and inlines
    ``unpack.js``. The base64 text cannot end the script element: it holds no "<"."""
    text = str(markup)
    raw = text.encode("utf-8")
    if len(raw) < PACK_MIN:
        return Markup(text)
    data = base64.b64encode(gzip_bytes(raw)).decode("ascii")
    return Markup(f'<script type="{PACKED_TYPE}" class="packed-html">{data}</script>')


def pack_script(js) -> Markup:
    """A script element whose code (our own, minified) ``unpack.js`` runs once the markup is in place."""
    data = base64.b64encode(gzip_bytes(str(js).encode("utf-8"))).decode("ascii")
    return Markup(f'<script type="{PACKED_JS_TYPE}" class="packed-js">{data}</script>')


def _text(m) -> str:
    return gzip.decompress(base64.b64decode(m.group(1))).decode("utf-8")


def unpacked(page: str) -> str:
    """``page`` with every packed block replaced by its markup and every packed script by the script
    element it becomes (the page as it runs once opened)."""
    return _PACKED_JS.sub(lambda m: "<script>" + _text(m) + "</script>", _PACKED.sub(_text, page))
