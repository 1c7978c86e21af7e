"""deploy/sunk: every Kubernetes object validates against Kubernetes' own schema, the ConfigMaps
carry what install-hooks writes, and the config they ship is valid and keeps state out of /tmp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from slurm_hooks.cli import build_parser
from slurm_hooks.config.parse import parse_config
from slurm_hooks.hooks.install import RUN_PARTS_NAME, hook_files

SUNK = Path(__file__).resolve().parent.parent / "deploy" / "sunk"
K8S = "1.30.0"  # SUNK 8.x runs on CKS 1.30+; the schema of any later minor is a superset here


def objects() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(SUNK.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and "kind" in doc:
                found.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return found


def by_name(kind: str, name: str) -> dict[str, Any]:
    return next(doc for _, doc in objects() if doc["kind"] == kind and doc["metadata"]["name"] == name)


@pytest.mark.parametrize(("where", "doc"), objects(), ids=[w for w, _ in objects()])
def test_every_object_validates_against_the_kubernetes_schema(where: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, K8S, strict=True)


def test_the_check_catches_a_bad_object() -> None:
    bad = {**by_name("PersistentVolumeClaim", "slurm-hooks-spool"), "spec": {"accessModes": "ReadWriteMany"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S, strict=True)


def test_the_values_fragment_volumes_and_mounts_validate_in_a_pod() -> None:
    values = yaml.safe_load((SUNK / "values-slurm-hooks.yaml").read_text())["compute"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "values-check"},
        "spec": {
            "containers": [{"name": "slurmd", "image": "x", "volumeMounts": values["volumeMounts"]}],
            "volumes": values["volumes"],
        },
    }
    kubernetes_validate.validate(pod, K8S, strict=True)
    example = by_name("Pod", "slurmd-slurm-hooks-example")["spec"]
    assert all(v in example["volumes"] for v in values["volumes"])  # one design, written twice
    assert all(m in example["containers"][0]["volumeMounts"] for m in values["volumeMounts"])


@pytest.mark.parametrize("hook", ["prolog", "epilog"])
def test_configmaps_carry_what_install_hooks_writes(hook: str) -> None:
    dest = Path("/opt/slurm-hooks/hooks")  # where Dockerfile.slurmd installs
    files = hook_files(dest, "/opt/slurm-hooks/venv/bin/python", parse_config("", "defaults"), None, paths=[])
    data = by_name("ConfigMap", f"slurm-hooks-{hook}")["data"]
    assert data == {RUN_PARTS_NAME: files[dest / f"{hook}.d" / RUN_PARTS_NAME]}


def test_shipped_config_is_valid_and_keeps_state_out_of_the_jobs_private_dirs() -> None:
    config = parse_config(by_name("ConfigMap", "slurm-hooks-config")["data"]["config.yaml"], "configmaps.yaml")
    for private in ("/tmp", "/dev/shm"):  # SUNK 8.1: per job, so the TaskProlog would not see the state
        assert not config.state_dir.startswith(private) and not config.spool_dir.startswith(private)
    pod = by_name("Pod", "slurmd-slurm-hooks-example")["spec"]
    mounted = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    for path in (
        config.state_dir,
        config.spool_dir,
        str(Path(config.log_file).parent),
        str(Path(config.metrics_file).parent),
        f"{config.host_root}/proc/driver/nvidia",
    ):
        assert path in mounted, path
    ncore = Path(config.host_root) / config.ncore_sources[0].path.lstrip("/")
    assert str(ncore.parent) in mounted


def test_kmsg_follow_writes_on_each_node_the_file_the_slurmd_pod_reads_read_only() -> None:
    config = parse_config(by_name("ConfigMap", "slurm-hooks-config")["data"]["config.yaml"], "configmaps.yaml")
    pod = by_name("DaemonSet", "slurm-hooks-kmsg-follow")["spec"]["template"]["spec"]
    follow = pod["containers"][0]
    argv = follow["command"]
    assert argv[:2] == ["/opt/slurm-hooks/bin/slurm-hooks", "kmsg-follow"]
    assert argv[argv.index("--output") + 1] == config.kernel_log_file
    assert build_parser().parse_args(argv[1:]).output == config.kernel_log_file  # a command this CLI takes

    def host_dir(spec: dict[str, Any], mounts: list[dict[str, Any]], path: str) -> tuple[str, bool]:
        mount = next(m for m in mounts if m["mountPath"] == str(Path(path).parent))
        volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
        return volume["hostPath"]["path"], bool(mount.get("readOnly"))

    slurmd = by_name("Pod", "slurmd-slurm-hooks-example")["spec"]
    written = host_dir(pod, follow["volumeMounts"], config.kernel_log_file)
    read = host_dir(slurmd, slurmd["containers"][0]["volumeMounts"], config.kernel_log_file)
    assert written == ("/var/log/slurm-hooks-kmsg", False) and read == ("/var/log/slurm-hooks-kmsg", True)
    kmsg = next(v for v in pod["volumes"] if v["name"] == "kmsg")["hostPath"]
    assert kmsg == {"path": "/dev/kmsg", "type": "CharDevice"} and follow["securityContext"]["privileged"] is True
