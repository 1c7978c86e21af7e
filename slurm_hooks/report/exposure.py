"""What every counted job exposes, failed or not: the denominators of the findings.

A node's exposure is how many jobs ran on it, kept by job width (a job on k nodes gives each of
them a 1/k share of its one chance to name a root node); a day's, how many jobs ended that day;
a configuration's, its jobs' GPU-seconds and the day it was first seen. Counted per distinct node list
and per column at C speed where it can be: a million jobs repeat a few thousand node lists.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import compress, repeat
from operator import attrgetter, eq, mul

from slurm_hooks.report.read import Jobs, node_names
from slurm_hooks.report.records import NO_CONFIG

MAX_NODES = 100_000  # distinct node names kept; a hostile node list must not grow memory without end
FOLD_AT = 20_000  # distinct node lists counted before they are expanded into nodes
MASKS_UP_TO = 32  # distinct configurations in a block summed one C pass each; more: row by row
_CONFIG = attrgetter("config")  # of a read.Recorded


class Exposure:
    def __init__(self) -> None:
        self.node_jobs: dict[str, Counter[int]] = defaultdict(Counter)  # node -> {job width: jobs}
        self.nodes_dropped = 0  # jobs' node names past MAX_NODES, not kept
        self.day_jobs: Counter[str] = Counter()  # jobs that ended each day
        self.first_day: dict[str, str] = {}  # config -> the day it was first seen
        self.config_gpu_s: Counter[str] = Counter()  # GPU-seconds of the jobs that name a config, by config
        self.gpu_s = 0  # GPU-seconds of every job counted
        self.node_s = 0
        # node list -> jobs: counted in C per row, expanded by fold() once per distinct list
        self.node_lists: Counter[str] = Counter()

    def add(self, jobs: Jobs, kept: list[bool], whole: bool, n_nodes: list[int], days: list[str]) -> None:
        """The jobs kept (`whole`: all of them) of a block, with their nodes and End's first 10 characters."""
        cols = jobs.cols
        records = jobs.records if whole else list(compress(jobs.records, kept))
        elapsed = cols.elapsed_s if whole else list(compress(cols.elapsed_s, kept))
        gpus = cols.n_gpus if whole else list(compress(cols.n_gpus, kept))
        widths = n_nodes if whole else list(compress(n_nodes, kept))
        days = days if whole else list(compress(days, kept))
        configs = list(map(_CONFIG, records))  # a job without our record: NO_CONFIG
        self.day_jobs.update(days)
        gpu_s = list(map(mul, elapsed, gpus))
        self.gpu_s += sum(gpu_s)
        self.node_s += sum(map(mul, elapsed, widths))
        distinct = set(configs)
        distinct.discard(NO_CONFIG)  # its GPU-seconds are the rest: recorded_gpu_s() never needs them
        if len(distinct) > MASKS_UP_TO:  # many configurations in one block: row by row
            for config, seconds, day in zip(configs, gpu_s, days, strict=True):
                if config != NO_CONFIG:
                    self.config_gpu_s[config] += seconds
                    self._seen(config, day)
            return self._nodes(cols.node_list, kept, whole)
        earliest = min(self.day_jobs, default="")  # of every block so far: few distinct days
        for config in distinct:  # a few per block: passes in C
            self.config_gpu_s[config] += sum(compress(gpu_s, map(eq, configs, repeat(config))))
            if self.first_day.get(config, "\x7f") > earliest:  # this block may hold an earlier day of it
                self._seen(config, min(compress(days, map(eq, configs, repeat(config)))))
        return self._nodes(cols.node_list, kept, whole)

    def _seen(self, config: str, day: str) -> None:
        if day < self.first_day.get(config, "\x7f"):
            self.first_day[config] = day

    def _nodes(self, node_lists: list[str], kept: list[bool], whole: bool) -> None:
        self.node_lists.update(node_lists if whole else compress(node_lists, kept))
        if len(self.node_lists) > FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """The node lists counted so far, expanded into each node's jobs by width."""
        for node_list, count in self.node_lists.items():
            nodes = node_names(node_list)
            width = len(nodes)
            for node in nodes:
                if node in self.node_jobs or len(self.node_jobs) < MAX_NODES:
                    self.node_jobs[node][width] += count
                else:
                    self.nodes_dropped += count
        self.node_lists.clear()

    def merge(self, other: Exposure) -> None:
        other.fold()
        for node, widths in other.node_jobs.items():
            if node in self.node_jobs or len(self.node_jobs) < MAX_NODES:
                self.node_jobs[node].update(widths)
            else:
                self.nodes_dropped += sum(widths.values())
        self.nodes_dropped += other.nodes_dropped
        self.day_jobs.update(other.day_jobs)
        for config, day in other.first_day.items():
            self._seen(config, day)
        self.config_gpu_s.update(other.config_gpu_s)
        self.gpu_s += other.gpu_s
        self.node_s += other.node_s

    def recorded_gpu_s(self) -> int:
        """GPU-seconds of the jobs whose record named a configuration."""
        return sum(self.config_gpu_s.values())

    def jobs_by_node(self) -> dict[str, Counter[int]]:
        """Each node's jobs by their width, every node list counted so far expanded."""
        self.fold()
        return self.node_jobs

    def share(self, node: str) -> float:  # after jobs_by_node()
        """The node's share of jobs' chances to be named root: Σ jobs/width, summed in width order."""
        return sum(jobs / width for width, jobs in sorted(self.node_jobs.get(node, Counter()).items()))
