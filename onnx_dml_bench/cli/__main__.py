"""`python -m onnx_dml_bench.cli`: the `onnx-dml-bench` command."""
import sys

from . import main

sys.exit(main())
