"""The GPU-host command line (``scripts/gpu-dml/``): ``python -m onnx_dml_bench.dml install --root R
--cache C`` writes the stack of an unpacked bundle, ``... info`` prints the ICD, Vulkan device and
nvidia-smi reading this machine gives."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .install.bundle import install_bundle
from .probe import adapter_info, gpu_snapshot
from .select import find_stack
from .wine.icd import detect_icd
from .wine.stackinfo import StackError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m onnx_dml_bench.dml")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("install", help="stack.json for a bundle unpacked at --root")
    a.add_argument("--root", required=True)
    a.add_argument("--cache", required=True)
    sub.add_parser("info", help="the ICD, Vulkan device and nvidia-smi reading this machine gives")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "install":
            install_bundle(Path(args.root), Path(args.cache))
            return 0
        stack = find_stack()
        out = {"icd": str(detect_icd() or ""), "gpu": gpu_snapshot()}
        if stack is not None:
            out["stack_gpu"] = stack.gpu
            out["adapter"] = adapter_info(stack)
        print(json.dumps(out, indent=2))
        return 0
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
