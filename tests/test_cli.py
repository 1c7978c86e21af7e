"""The commands an operator types: decode a record, and collect a support bundle that diagnose reads."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

EXAMPLE = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "slurm_hooks", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_decode_text() -> None:
    out = cli("decode", "alice text slurm-hooks/v1 label=oom_killed node=n1 rank=3")
    assert out.returncode == 0 and json.loads(out.stdout) == {"label": "oom_killed", "node": "n1", "rank": "3"}
    assert cli("decode", "JS1:abc").returncode == 1


def test_collect_makes_a_bundle_that_diagnose_reads(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"spool_dir: {tmp_path / 'spool'}\n")
    shutil.copytree(EXAMPLE, tmp_path / "spool/jobs/6120447/bundle")
    env = {"SLURM_HOOKS_CONFIG": str(config), "SLURM_HOOKS_CACHE_DIR": str(tmp_path / "cache")}
    old = os.umask(0o022)
    try:
        out = cli("collect", "6120447", "-o", str(tmp_path / "support.tar.gz"), env=env)
    finally:
        os.umask(old)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "support.tar.gz").stat().st_mode & 0o777 == 0o600  # the job's logs: not world-readable
    with tarfile.open(tmp_path / "support.tar.gz") as tar:
        assert "6120447/job.json" in tar.getnames()
    got = json.loads(cli("diagnose", "--json", str(tmp_path / "support.tar.gz")).stdout)
    assert got["label"] == "cdmm_checkpoint_segfault"
    assert cli("collect", "999", "-o", str(tmp_path / "x.tgz"), env=env).returncode == 1
    bad = cli("collect", "../etc", "-o", str(tmp_path / "x.tgz"), env=env)
    assert bad.returncode == 2 and "not a job id" in bad.stderr


def test_bad_config_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("annotation: {field: notes}\n")
    out = cli("flush", env={"SLURM_HOOKS_CONFIG": str(config), "SLURM_HOOKS_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert str(config) in out.stderr and "annotation.field" in out.stderr


def test_diagnose_reads_the_configs_rule_files_like_the_epilog(tmp_path: Path) -> None:
    site, mine = tmp_path / "site.yaml", tmp_path / "mine.yaml"
    site.write_text("advice:\n  cdmm_checkpoint_segfault: ['site advice']\n  unknown: ['site unknown']\n")
    mine.write_text("advice:\n  cdmm_checkpoint_segfault: ['my advice']\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"rule_files: [{site}]\n")
    env = {"SLURM_HOOKS_CONFIG": str(config), "SLURM_HOOKS_CACHE_DIR": str(tmp_path / "cache")}

    def advice(*flags: str) -> list[str]:
        out = cli("diagnose", "--json", *flags, str(EXAMPLE), env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["advice"]

    assert advice() == ["site advice"]
    assert advice("--rules", str(mine)) == ["my advice"]  # --rules comes after the site's files
    assert len(advice("--no-site-rules")) > 1 and "site advice" not in advice("--no-site-rules")
    assert advice("--no-site-rules", "--rules", str(mine)) == ["my advice"]
    config.write_text("rule_files: not-a-list\n")
    bad = cli("diagnose", str(EXAMPLE), env=env)
    assert bad.returncode == 2 and "rule_files" in bad.stderr and str(config) in bad.stderr


def test_every_subcommand_takes_config_and_help_keeps_hooks_apart() -> None:
    from slurm_hooks.cli import HOOKS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert "--config" in command.format_usage(), name
    text = parser.format_help()
    operators, hooks = text.split("operator commands:")[1].split("Slurm hooks")
    assert all(f"  {h} " in hooks for h in HOOKS) and not any(f"  {h} " in operators for h in HOOKS)
    assert "  diagnose " in operators and "  report " in operators


def test_facts_says_which_config_it_read_and_never_prints_a_repr(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"host_root: {Path(__file__).parent / 'fixtures/hosts/gb200-cdmm-driver'}\nncore_sources: []\n")
    out = cli("facts", "--config", str(config), env={"SLURM_HOOKS_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"config: {config}"
    assert "None" not in out.stdout and "{" not in out.stdout and "[" not in out.stdout
    assert "cuda_driver_version: not read" in out.stdout  # NVML is not loadable here


def test_diagnose_wraps_the_decisive_frame_instead_of_cutting_it() -> None:
    out = cli("diagnose", "--config", str(Path(__file__).parent.parent / "deploy/config.example.yaml"), str(EXAMPLE))
    assert out.returncode == 0, out.stderr
    assert "in crc32_16bytes(void const*, unsigned long, unsigned int)" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) <= 100
