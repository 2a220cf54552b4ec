"""Direct DirectML lane: operator descriptors run straight through DirectML.dll, no ONNX Runtime.

``harness.c`` is a small Windows program (built with MinGW by ``build.ensure_built()``) that runs
under the same Wine stack and the same DirectML.dll as the ``--ep dml`` lane; ``runner.DirectRunner``
keeps one harness process alive and sends it descriptors.
"""

from .build import ensure_built
from .runner import DirectError, DirectResult, DirectRunner

__all__ = ["DirectError", "DirectResult", "DirectRunner", "ensure_built"]
