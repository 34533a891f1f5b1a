"""``certify report``: one self-contained HTML page for a certification run (issue 13).

``evidence`` reads and verifies a run directory, ``timeline`` and ``charts`` compute SVG geometry,
``page`` and ``template`` render it (autoescaped), ``command`` is the CLI entry point.
"""
