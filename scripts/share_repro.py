#!/usr/bin/env python3
"""Make the bundles of the committed samples share one repro script: every standalone bundle under
reports/ (``*/bundle/<case id>/``, as `triage` and the main job write them) gets a repro.py of a few
lines that runs reports/_shared/repro.py on its folder (``bundle.build.share_repro``).

    .venv/bin/python scripts/share_repro.py [FOLDER ...]      (default: reports/)

Run it after adding a sample with bundles; a bundle that shares the script already is left as it is.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from onnx_dml_bench.bundle.build import BundleError, share_repro  # noqa: E402

SHARED = ROOT / "reports" / "_shared" / "repro.py"


def main(folders: list[str]) -> int:
    done = kept = 0
    for folder in [Path(f) for f in folders] or [ROOT / "reports"]:
        for repro in sorted(folder.glob("**/bundle/*/repro.py")):
            try:
                if share_repro(repro.parent, SHARED):
                    done += 1
                else:
                    kept += 1
            except BundleError as e:
                print(f"left as it is: {e}", file=sys.stderr)
    print(f"{done} bundles now run {SHARED.relative_to(ROOT)}; {kept} did already")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
