"""The bench's cases as a pytest suite.

    pytest --pyargs onnx_dml_bench.conformance --dml-bench-ep cpu --dml-bench-profile smoke

``--pyargs onnx_dml_bench.conformance`` names this package as the thing to test, so that a run
from inside another project collects the bench's cases and none of that project's own tests. The
cases are collected by the plugin (``onnx_dml_bench.conformance.plugin``, registered through the
``pytest11`` entry point ``dml_bench``; load it with ``-p onnx_dml_bench.conformance.plugin``
where plugin autoloading is off), only when ``--dml-bench-ep`` is given. See docs/ci.md.
"""
