"""Which pyslurm release line builds against which Slurm: pyslurm X.Y.* pairs with Slurm X.0Y only.

One table for the build script (deploy/pyslurm/build-wheel.sh), the runtime check and the README.
"""

from __future__ import annotations

import sys

TAGS = {  # Slurm major.minor -> the pyslurm tag to build (https://github.com/PySlurm/pyslurm/tags)
    "22.05": "v22.5.3",
    "23.02": "v23.2.3",
    "23.11": "v23.11.1",
    "24.05": "v24.5.1",
    "24.11": "v24.11.0",  # CoreWeave SUNK 6.x
    "25.05": "v25.5.0",  # SUNK 7.x
    "25.11": "v25.11.2",  # SUNK 8.x
}


def major_minor(version: str) -> tuple[int, int]:
    """'22.5.3' (pyslurm) or 'slurm 22.05.8' (scontrol --version) -> (22, 5); ValueError otherwise."""
    parts = version.split()[-1].split(".")
    return int(parts[0]), int(parts[1])


def slurm_line(version: str) -> str:
    """'22.5.3' -> '22.05': the Slurm a pyslurm version (or a Slurm version) belongs to."""
    major, minor = major_minor(version)
    return f"{major}.{minor:02d}"


def matching_tag(slurm_version: str) -> str:
    return TAGS.get(slurm_line(slurm_version), "none published")


if __name__ == "__main__":  # build-wheel.sh: `python -m slurm_hooks.slurm.pyslurm_matrix 22.05.8`
    print(matching_tag(sys.argv[1]))
