"""The onnxruntime-node driver: ``client.py`` runs ONNX models with the Windows node.exe and
``worker.js`` under the Wine session."""
