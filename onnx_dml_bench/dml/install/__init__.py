"""Writers of DirectML stacks; they import ``wine/`` only.

``default`` (wine8-sm51, ``setup()``), ``sm6`` (wine10-sm6), ``variants`` (further onnxruntime-node
builds and DirectML.dll files), ``bundle`` (a GPU host's unpacked bundle); ``debian`` and ``npm``
are the package tools they share. Each writes its ``stack.json`` (or ``info.json``) last.
"""
