"""From a failure to a small, handed-over case: probing an EP round by round (``prober.py``),
shrinking a failing case while its signature holds (``shrink.py``), fuzzing for new signatures
(``fuzz.py``), and the commands over a results file — shrink or bundle one case, triage every
signature (``triage.py``)."""
