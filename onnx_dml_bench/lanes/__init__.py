"""EP lanes: how the bench runs cases on one execution provider.

Lanes come in three kinds: EPs of the installed onnxruntime package, built in (CPU, CUDA,
OpenVINO, DirectML on Windows) or plugin libraries registered at run time (WebGPU from the
onnxruntime-ep-webgpu package, or any plugin library given by path) — ``ort.py``; DirectML on
Linux, which runs the Windows build of ONNX Runtime under Wine — ``dml_wine.py``; and the direct
DirectML lane, descriptors through DirectML.dll with no ONNX Runtime — ``dml_direct.py``.

``base.py`` declares the ``Lane`` and the backend protocols (what the runner knows of a lane);
``catalog.py`` holds the EPs the bench knows and ``resolve()``, which turns a user's EP name into
its lane. This package module imports nothing: importing ``lanes.base`` stays light (no ``dml/``).
"""
