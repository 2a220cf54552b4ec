"""onnx-dml-bench: DirectML operator conformance for ONNX Runtime execution providers."""
__version__ = "0.1.0"
