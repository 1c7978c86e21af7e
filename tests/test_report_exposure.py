"""What every job exposes (the findings' denominators) is the same whichever way a block is summed:
by C passes per configuration, or row by row when a block holds many configurations."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from slurm_hooks.config import Config
from slurm_hooks.report.parallel import count_rows
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import counting
from tests.test_report_aggregate import BASE, SINCE, UNTIL


@pytest.mark.parametrize("drivers", [3, 40])  # 40 > MASKS_UP_TO: the row-by-row way
def test_gpu_seconds_days_and_nodes_by_configuration(drivers: int, tmp_path) -> None:
    rows = [
        replace(
            BASE,
            job_id=str(i),
            state="COMPLETED",
            end=f"2026-11-{1 + (i * 7) % 28:02d}T10:00:00",
            elapsed_s=100 + i,
            n_gpus=4 * (1 + i % 3),
            node_list=f"gb-r01-c[{1 + i % 5:02d}-{2 + i % 5:02d}]",
            admin_comment=f"slurm-hooks/v1 label=success driver=d{i % drivers} cdmm=off ncore=1 gpu=g state=completed",
        )
        for i in range(500)
    ]
    rows.append(replace(BASE, job_id="999", state="COMPLETED", elapsed_s=10, n_gpus=8))  # no record: no config
    tally = count_rows(rows, counting(Config(spool_dir=str(tmp_path)), Filters(), 0, SINCE, UNTIL))
    exposure = tally.exposure
    want: Counter[str] = Counter()
    first: dict[str, str] = {}
    for r in rows[:-1]:
        config = f"d{int(r.job_id) % drivers} off 1 g"
        want[config] += r.elapsed_s * r.n_gpus
        first[config] = min(first.get(config, "9"), r.end[:10])
    assert exposure.config_gpu_s == want and exposure.first_day == first
    assert exposure.gpu_s == sum(want.values()) + 80 and exposure.recorded_gpu_s() == sum(want.values())
    assert sum(exposure.day_jobs.values()) == 501
    by_node = exposure.jobs_by_node()
    assert sum(sum(widths.values()) for widths in by_node.values()) == 2 * 500 + 2  # two nodes a job
    assert exposure.share("gb-r01-c01") == pytest.approx(
        sum(1 / 2 for i in range(500) if i % 5 == 0)
    )  # c01: in c[01-02] only
