"""The EpilogSlurmctld flow: the single annotator waits for the node Epilogs' parts in the shared spool."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from slurm_hooks.hooks import epilog_slurmctld
from slurm_hooks.hooks.epilog_slurmctld import run_epilog_slurmctld
from tests.test_epilog import EXAMPLE, JOB, Rig


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    rig = Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text(), nodes=("n1", "n2"), annotator="epilog_slurmctld")
    for node in ("n1", "n2"):  # the node Epilogs: parts only, no annotation
        rig.node = node
        rig.run()
    assert rig.slurm.sets == [] and rig.spool.parts_done(JOB) == {"n1", "n2"}
    rig.node = "slurmctld-host"
    return rig


def test_merges_the_node_parts_and_annotates(rig: Rig) -> None:
    run_epilog_slurmctld(rig.ctx, rig.config, rig.deps())
    # Rank 6 ran on n2 (srun's block distribution: the log's own node names are not the job's, §8.20);
    # both parts carry the facts the rig wrote for n1, so n2 has none and CDMM is unknown (§8.15).
    assert (rig.annotation() or {}).get("label") == "checkpoint_segfault"
    assert (rig.annotation() or {}).get("node") == "n2" and (rig.annotation() or {}).get("rank") == "6"
    assert rig.clock.sleeps == [] and rig.outbox_files() == []


def test_slurmctld_down_still_merges_from_the_environment(rig: Rig) -> None:
    rig.slurm.ctld_up = False
    run_epilog_slurmctld(replace(rig.ctx, node_list="n1"), rig.config, rig.deps())
    assert rig.log.first("diagnosed")["missing_nodes"] == [] and rig.annotation() is not None


def test_opt_out(rig: Rig) -> None:
    run_epilog_slurmctld(replace(rig.ctx, comment="slurm-hooks=off"), rig.config, rig.deps())
    assert rig.slurm.sets == [] and rig.log.events()[-1] == "opted_out"


def test_main_does_nothing_unless_it_is_the_configured_annotator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"log_file: {tmp_path / 'hooks.log'}\nspool_dir: {tmp_path / 'spool'}\n")  # annotator: epilog
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    assert epilog_slurmctld.main({"SLURM_JOB_ID": JOB}) == 0
    assert not (tmp_path / "spool").exists() and not (tmp_path / "hooks.log").exists()
