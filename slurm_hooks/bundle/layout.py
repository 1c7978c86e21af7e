"""The layout of an evidence bundle (DESIGN.md "Evidence bundle v1"), shared by the directory reader
(the package's `__init__`) and the tarball extractor (`tarball.py`): `job.json` at the top, and
one folder per kind of part, each file in it named for its node or log."""

from __future__ import annotations

PARTS = ("logs", "nodes", "kernel", "flight")  # in this order against the size cap: the job's own logs come first
