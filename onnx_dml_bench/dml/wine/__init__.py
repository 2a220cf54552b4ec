"""The bottom of the DirectML stack: host plumbing that imports nothing else of ``dml/``.

``stackinfo`` (what a stack is, the cache layout and ``stack.json``), ``proc`` (commands, locks),
``versions`` (what a stack records), ``session`` (Xvfb, wineservers, a prefix per worker),
``prefix`` (the Windows 10 prefix), ``root`` (a stack in a root of its own), ``icd`` (which Vulkan
driver), ``pe`` (version resources of DLLs).
"""
