"""The hand-over folder of one case for a driver bug report (``build.py``): its model and data in
ONNX's backend-test layout, the EP's and the CPU EP's outputs, a standalone ``repro.py``
(``repro.py``), the operator desc as C++ and a DxDispatch model (``dxdispatch.py``)."""
