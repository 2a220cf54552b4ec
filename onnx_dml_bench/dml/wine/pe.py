"""Read the version resource of a Windows PE file (DLL/EXE) in pure Python.

Only what the version manifest needs: the fixed file/product version
(VS_FIXEDFILEINFO) and the "FileVersion" / "ProductVersion" strings of the
StringFileInfo block.  The resource is located by scanning for the
``VS_VERSION_INFO`` key, which is reliable for ordinary release binaries.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

_VS_KEY = "VS_VERSION_INFO".encode("utf-16-le")
_FIXED_SIGNATURE = struct.pack("<I", 0xFEEF04BD)


def _read_utf16_value(data: bytes | mmap.mmap, key: str, start: int, end: int) -> str | None:
    needle = (key + "\0").encode("utf-16-le")
    pos = data.find(needle, start, end)
    if pos < 0:
        return None
    pos += len(needle)
    # Value is aligned to 32 bits; skip the padding.
    while pos < end and pos % 4 and data[pos:pos + 2] == b"\0\0":
        pos += 2
    chars = []
    while pos + 1 < end:
        unit = data[pos:pos + 2]
        if unit == b"\0\0":
            break
        chars.append(unit)
        pos += 2
        if len(chars) > 256:
            break
    try:
        text = b"".join(chars).decode("utf-16-le").strip()
    except UnicodeDecodeError:
        return None
    return text or None


def pe_version(path: str | Path) -> dict[str, str]:
    """Return ``{"file_version", "product_version", "file_version_string",
    "product_version_string"}`` (whatever could be read) for a PE file."""
    out: dict[str, str] = {}
    p = Path(path)
    with p.open("rb") as fh:
        if fh.read(2) != b"MZ":
            raise ValueError(f"{p} is not a PE file")
        fh.seek(0)
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            key = data.rfind(_VS_KEY)
            if key < 0:
                return out
            sig = data.find(_FIXED_SIGNATURE, key, key + 128)
            if sig >= 0 and sig + 52 <= len(data):
                (_sig, _struc, fv_ms, fv_ls, pv_ms, pv_ls) = struct.unpack_from("<6I", data, sig)
                out["file_version"] = f"{fv_ms >> 16}.{fv_ms & 0xFFFF}.{fv_ls >> 16}.{fv_ls & 0xFFFF}"
                out["product_version"] = f"{pv_ms >> 16}.{pv_ms & 0xFFFF}.{pv_ls >> 16}.{pv_ls & 0xFFFF}"
            # The whole VS_VERSIONINFO block is at most 64 KiB (WORD length).
            (block_len,) = struct.unpack_from("<H", data, max(0, key - 6))
            end = min(len(data), key - 6 + max(block_len, 0x400))
            for name, field in (("FileVersion", "file_version_string"),
                                ("ProductVersion", "product_version_string")):
                value = _read_utf16_value(data, name, key, end)
                if value:
                    out[field] = value
    return out
