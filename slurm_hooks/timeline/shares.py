"""A bundle's scanning cut into shares, one a CPU: a large job log in ranges of whole lines, the
kernel logs in runs of nodes (bench/scale.py measures what it saves).

The cut is by bytes, not by what the lines hold: a job's ranks print alike, so equal ranges are
close to equal work. A small bundle is one share, scanned without a fork, whose cost (a child and
its answer pickled back) would outweigh the scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from slurm_hooks.bundle import Bundle, BundleFile
from slurm_hooks.timeline.scan import line_terminator

PARALLEL_BYTES = 1 << 20  # a bundle's logs and kernel logs together: below this, one share (about even there)
SPLIT_BYTES = 512 << 10  # a job log larger than this is cut into ranges, one a share
MAX_WORKERS = 4  # shares at most: the job log's ranges then cost more to merge than they save
_LINE_SEARCH = 8 << 20  # bytes searched past a cut for the next line's start; past that no cut there
_CHUNK = 1 << 16


@dataclass(frozen=True)
class LogRange:
    file: BundleFile
    start: int  # a line's first byte
    stop: int | None  # the first byte of the next range's first line; None: to the end


@dataclass
class Share:
    logs: list[LogRange] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)  # nodes, in order
    size: int = 0


@dataclass(frozen=True)
class Parallel:
    """How many shares a bundle may be cut into, and from what size on (tests cut small bundles)."""

    workers: int
    min_bytes: int = PARALLEL_BYTES
    split_bytes: int = SPLIT_BYTES


def plan_shares(bundle: Bundle, parallel: Parallel) -> list[Share]:
    total = sum(f.size for f in bundle.logs) + sum(f.size for f in bundle.kernels.values())
    workers = max(1, min(parallel.workers, MAX_WORKERS))
    if workers == 1 or total < parallel.min_bytes:
        return [Share([LogRange(f, 0, None) for f in bundle.logs], sorted(bundle.kernels), total)]
    shares = [Share() for _ in range(workers)]
    for file in bundle.logs:
        if file.size > parallel.split_bytes:
            # fewer ranges than shares where no line starts near a cut
            for share, (start, stop) in zip(shares, _ranges(file, workers), strict=False):
                share.logs.append(LogRange(file, start, stop))
                share.size += (stop if stop is not None else file.size) - start
        else:  # a whole small log to the share with the fewest bytes so far
            least = min(shares, key=lambda s: s.size)
            least.logs.append(LogRange(file, 0, None))
            least.size += file.size
    nodes = sorted(bundle.kernels)
    per = -(-len(nodes) // workers)
    for i, share in enumerate(shares):
        share.kernels = nodes[i * per : (i + 1) * per]
    return [s for s in shares if s.logs or s.kernels]


def _ranges(file: BundleFile, parts: int) -> list[tuple[int, int | None]]:
    """(start, stop) of up to `parts` ranges of whole lines covering the file."""
    with file.open() as fh:
        if line_terminator(fh) != b"\n":  # bare CRs: the scanners count such lines their own way
            return [(0, None)]
        cuts = [0]
        for i in range(1, parts):
            at = _line_start(fh, file.size * i // parts)
            if at is not None and cuts[-1] < at < file.size:
                cuts.append(at)
    return [(start, stop) for start, stop in zip(cuts, [*cuts[1:], None], strict=True)]


def _line_start(fh: BinaryIO, offset: int) -> int | None:
    """The first byte of the first line starting after `offset`, or None within _LINE_SEARCH."""
    fh.seek(offset)
    searched = 0
    while searched < _LINE_SEARCH and (chunk := fh.read(_CHUNK)):
        if (end := chunk.find(b"\n")) >= 0:
            return offset + searched + end + 1
        searched += len(chunk)
    return None
