"""`slurm-hooks` in a fresh Python process that reports its own peak RSS and its workers'.

VmHWM, not RUSAGE_SELF's ru_maxrss: Linux carries ru_maxrss over from the process that spawned
this one (a bench or pytest, large by then) across exec, so it reports the parent's peak where
that is higher; VmHWM belongs to the new process image alone. The scan and report workers are
forked, not exec'd: RUSAGE_CHILDREN's figure is theirs (and ripgrep's, which starts below ours).
"""

from __future__ import annotations

import json

# argv: slurm-hooks' own; stderr's last line: {"rc": exit status, "peak_kib": peak RSS in KiB}
PROBE = (
    "import json, re, resource, sys; from slurm_hooks.cli import main; rc = main(sys.argv[1:]);"
    "own = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1]);"
    "workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss;"
    "print(json.dumps({'rc': rc, 'peak_kib': max(own, workers)}), file=sys.stderr); sys.exit(rc)"
)


def peak_mib(stderr: str) -> float:
    """The peak RSS in MiB a PROBE run reported."""
    return float(json.loads(stderr.strip().splitlines()[-1])["peak_kib"]) / 1024
