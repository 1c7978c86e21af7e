"""What every counted job exposes, failed or not: the denominators of the findings.

A node's exposure is how many jobs ran on it, kept by job width (a job on k nodes gives each of
them a 1/k share of its one chance to name a root node); a day's, how many jobs ended that day;
a configuration's, its jobs' GPU-seconds and the days it was seen. Counted per distinct node list
and per column at C speed where it can be: a million jobs repeat a few thousand node lists.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import compress
from operator import itemgetter, mul

from slurm_hooks.report.read import Jobs

MAX_NODES = 100_000  # distinct node names kept; a hostile node list must not grow memory without end
_DAY = itemgetter(slice(0, 10))
_CONFIG = itemgetter(2)  # of a records.Record


class Exposure:
    def __init__(self) -> None:
        self.node_jobs: dict[str, Counter[int]] = defaultdict(Counter)  # node -> {job width: jobs}
        self.nodes_dropped = 0  # jobs' node names past MAX_NODES, not kept
        self.day_jobs: Counter[str] = Counter()
        self.day_configs: Counter[tuple[str, str]] = Counter()  # (day, config) of recorded jobs
        self.config_gpu_s: Counter[str] = Counter()  # GPU-seconds of every recorded job, by config
        self.gpu_s = 0  # GPU-seconds of every job counted
        self.node_s = 0

    def add(self, jobs: Jobs, kept: list[bool], n_nodes: list[int]) -> None:
        cols = jobs.cols
        days = list(map(_DAY, compress(cols.end, kept)))
        self.day_jobs.update(days)
        records = list(compress(jobs.records, kept))
        configs = list(map(_CONFIG, records))
        recorded = [bool(r.label) for r in records]
        self.day_configs.update(compress(zip(days, configs, strict=True), recorded))
        elapsed = list(compress(cols.elapsed_s, kept))
        gpu_s = list(map(mul, elapsed, compress(cols.n_gpus, kept)))
        self.gpu_s += sum(gpu_s)
        self.node_s += sum(map(mul, elapsed, compress(n_nodes, kept)))
        per_config = self.config_gpu_s
        for config, seconds in compress(zip(configs, gpu_s, strict=True), recorded):
            per_config[config] += seconds
        names = dict(zip(cols.node_list, jobs.spreads, strict=True))
        for node_list, count in Counter(compress(cols.node_list, kept)).items():
            nodes = names[node_list][0]
            width = len(nodes)
            for node in nodes:
                if node in self.node_jobs or len(self.node_jobs) < MAX_NODES:
                    self.node_jobs[node][width] += count
                else:
                    self.nodes_dropped += count

    def merge(self, other: Exposure) -> None:
        for node, widths in other.node_jobs.items():
            if node in self.node_jobs or len(self.node_jobs) < MAX_NODES:
                self.node_jobs[node].update(widths)
            else:
                self.nodes_dropped += sum(widths.values())
        self.nodes_dropped += other.nodes_dropped
        self.day_jobs.update(other.day_jobs)
        self.day_configs.update(other.day_configs)
        self.config_gpu_s.update(other.config_gpu_s)
        self.gpu_s += other.gpu_s
        self.node_s += other.node_s

    def share(self, node: str) -> float:
        """The node's share of jobs' chances to be named root: Σ jobs/width, summed in width order."""
        return sum(jobs / width for width, jobs in sorted(self.node_jobs.get(node, Counter()).items()))
