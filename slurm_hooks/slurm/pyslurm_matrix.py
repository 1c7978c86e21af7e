"""Which pyslurm release line builds against which Slurm: pyslurm X.Y.* pairs with Slurm X.0Y only.

One table for the build script (deploy/pyslurm/build-wheel.sh), the runtime check and the README,
and beside it the sources this project vendors (../shared/vendor/) with the build pins that belong
to each source: pyslurm 22.5's `setuptools==59.2.0` needs distutils, gone in Python 3.12+, while
the 24.11 branch builds with current tools.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

TAGS = {  # Slurm major.minor -> the pyslurm tag to build (https://github.com/PySlurm/pyslurm/tags)
    "22.05": "v22.5.3",
    "23.02": "v23.2.3",
    "23.11": "v23.11.1",
    "24.05": "v24.5.1",
    "24.11": "v24.11.0",  # CoreWeave SUNK 6.x (the tag needs Cython<3.1; the 24.11.x branch builds as is)
    "25.05": "v25.5.0",  # SUNK 7.x
    "25.11": "v25.11.2",  # SUNK 8.x
}


@dataclass(frozen=True)
class Source:
    tarball: str  # in ../shared/vendor/: `git archive` of a pyslurm commit
    pins: tuple[str, ...]  # what its build needs, installed into the build's own venv


SOURCES = {  # Slurm major.minor -> the vendored pyslurm source for it; none for 26.05 (no release yet)
    "22.05": Source("pyslurm-22.5.3.tar.gz", ("Cython>=0.29.30,<3.0", "setuptools==59.2.0", "wheel==0.37.0")),
    "24.11": Source(  # the 24.11.x branch at 2adb2da: the f-string fix tag v24.11.0 lacks
        "pyslurm-24.11.x-2adb2da.tar.gz", ("Cython>=3.0,<4", "setuptools>=68", "wheel>=0.37.0", "packaging>=21.3")
    ),
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


def _main(argv: list[str]) -> int:
    """build-wheel.sh: `tag 22.05.8` -> the tag; `source 24.11.5` -> tarball, then its pins, one a line
    (exit 3 when nothing is vendored for that Slurm)."""
    what, version = argv
    if what == "tag":
        print(matching_tag(version))
        return 0
    source = SOURCES.get(slurm_line(version))
    if source is None:
        return 3
    print("\n".join((source.tarball, *source.pins)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
