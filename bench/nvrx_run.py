"""Runs nvidia-resiliency-ext's restart agent, deterministic only, on each log path read from stdin.

Run by bench/nvrx_adapter.py with the NVRx venv's python (bench/nvrx_venv.sh), so it imports only
the standard library and NVRx. Per log: the agent's own command line, `--disable-l1` (no model, no
endpoint: L0 evidence, then L3/L4 policy), in this one process; one JSON line out with what the
adapter maps: its primary failure (class, signature, node, rank, gpu, line), its decision, or the
error it raised.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from nvidia_resiliency_ext.attribution.restart_agent.cli import main as restart_agent


def analyse(log: str) -> dict[str, object]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            restart_agent(["--disable-l1", log])
        result = json.loads(out.getvalue().strip().splitlines()[-1])
    except (Exception, SystemExit) as exc:  # one log's failure is that case's error, not the run's
        return {"log": log, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"log": log, "primary_failure": result.get("primary_failure"), "decision": result.get("decision")}


def main() -> int:
    for line in sys.stdin:
        if log := line.rstrip("\n"):
            print(json.dumps(analyse(log)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
