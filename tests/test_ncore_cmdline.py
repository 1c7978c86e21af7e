"""ncore from the kernel command line ({type: cmdline}): the image name of CoreWeave's netboot rootfs
URL, and never any other part of that URL, whose query string carries presigned credentials."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_hooks.config import Config, ConfigError, NcoreSource
from slurm_hooks.config.parse import parse_config
from slurm_hooks.facts import collect_facts
from slurm_hooks.facts.ncore import read_ncore
from tests.fakes import FailingGpu

HOSTS = Path(__file__).parent / "fixtures" / "hosts"
SECRET = "PLANTEDsecretAKIA0000"  # stands for the presigned URL's credential and signature
NETBOOT = (
    "BOOT_IMAGE=vmlinuz ip=dhcp rd.live.image console=ttyS0 root=live:https://objects.example.com/"
    "coreweave-ncore-images/ncore-3.6.2-gb200/rootfs.squashfs?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    f"&X-Amz-Credential={SECRET}%2F20261127%2Fus-east-1&X-Amz-Signature={SECRET}beef rd.writable.fsimg=1\n"
)
CMDLINE = (NcoreSource(type="cmdline"),)


def host_with(tmp_path: Path, cmdline: str) -> Path:
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "gb200-cdmm-driver", root)
    (root / "proc/cmdline").write_text(cmdline)
    return root


def ncore(tmp_path: Path, cmdline: str) -> tuple[str | None, list[str]]:
    errors: list[str] = []
    return read_ncore(CMDLINE, str(host_with(tmp_path, cmdline)), 3.0, errors), errors


def test_the_image_name_is_taken_from_the_netboot_url(tmp_path: Path) -> None:
    assert ncore(tmp_path, NETBOOT) == ("ncore-3.6.2-gb200", [])


@pytest.mark.parametrize(
    ("cmdline", "why"),
    [
        (f"root=/dev/sda1 quiet token={SECRET}\n", "no coreweave-ncore-images/"),
        (f"root=live:https://x/coreweave-ncore-images/?sig={SECRET}\n", "not a plain image name after"),
        (f"root=live:https://x/coreweave-ncore-images/n%2e{SECRET}/rootfs\n", "not a plain image name after"),
        (f"root=live:https://x/coreweave-ncore-images/ncore-3.6?X-Amz-Signature={SECRET}\n", "not a plain image"),
        (f"root=live:https://x/coreweave-ncore-images/{'a' * 65}/rootfs?sig={SECRET}\n", "not a plain image"),
    ],
    ids=["no-netboot", "empty-name", "escaped", "query-right-after", "too-long"],
)
def test_no_image_name_is_said_without_any_of_the_command_line(tmp_path: Path, cmdline: str, why: str) -> None:
    value, errors = ncore(tmp_path, cmdline)
    assert value is None and len(errors) == 1 and why in errors[0] and errors[0].startswith("ncore cmdline")
    assert SECRET not in errors[0] and "https" not in errors[0] and "sig=" not in errors[0]


def test_a_missing_cmdline_says_only_its_path_and_the_next_source_is_tried(tmp_path: Path) -> None:
    errors: list[str] = []
    sources = (*CMDLINE, NcoreSource(type="file", path="/etc/ncore-release"))
    assert read_ncore(sources, str(HOSTS / "gb200-cdmm-driver"), 3.0, errors) == "3.6.2"
    assert errors == ["ncore cmdline /proc/cmdline: No such file or directory"]


def test_the_credential_appears_nowhere_the_prolog_writes(tmp_path: Path) -> None:
    """Facts, the job's node.json and env file, the hook log, errors, stdout and stderr."""
    root = host_with(tmp_path, NETBOOT)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"host_root: {root}\nstate_dir: {tmp_path / 'state'}\nlog_file: {tmp_path / 'hooks.log'}\n"
        "ncore_sources: [{type: cmdline}]\n"
    )
    env = {**os.environ, "SLURM_HOOKS_CONFIG": str(config), "SLURM_HOOKS_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-m", "slurm_hooks", *argv], env=env, capture_output=True, timeout=60)
        for argv, env in ((["prolog"], {**env, "SLURM_JOB_ID": "91"}), (["facts", "--json"], env))
    ]
    facts = json.loads(runs[1].stdout)
    assert facts["ncore_version"] == "ncore-3.6.2-gb200"
    assert json.loads((tmp_path / "state/jobs/91/node.json").read_text())["ncore_version"] == "ncore-3.6.2-gb200"
    assert "export SLURM_HOOKS_NCORE_VERSION=ncore-3.6.2-gb200\n" in (tmp_path / "state/jobs/91/env").read_text()
    logged = [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]
    assert [line["ncore"] for line in logged if line["event"] == "facts_recorded"] == ["ncore-3.6.2-gb200"]
    for run in runs:
        assert run.returncode == 0 and SECRET.encode() not in run.stdout + run.stderr
    planted = root / "proc/cmdline"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != planted]
    assert written and not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_facts_with_no_image_on_the_command_line_keep_no_part_of_it(tmp_path: Path) -> None:
    root = host_with(tmp_path, f"root=live:https://x/images/rootfs?sig={SECRET}\n")
    facts = collect_facts(Config(host_root=str(root), ncore_sources=CMDLINE), FailingGpu("no NVML"))
    assert facts["ncore_version"] is None and SECRET not in json.dumps(facts)
    assert any(e.startswith("ncore cmdline /proc/cmdline: no coreweave-ncore-images/") for e in facts["errors"])


def test_config_takes_type_cmdline_alone_and_names_the_key_it_does_not_use() -> None:
    assert parse_config("ncore_sources: [{type: cmdline}]\n", "c.yaml").ncore_sources == CMDLINE
    with pytest.raises(ConfigError, match=r"c.yaml: key 'ncore_sources\[0\].path' is not used by type cmdline"):
        parse_config("ncore_sources: [{type: cmdline, path: /proc/cmdline}]\n", "c.yaml")
    with pytest.raises(ConfigError, match="must be one of file, env, command, cmdline"):
        parse_config("ncore_sources: [{type: kernel-cmdline}]\n", "c.yaml")
