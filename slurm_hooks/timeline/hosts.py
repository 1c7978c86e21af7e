"""What a log calls a host, as one of the job's Slurm node names (log-signatures §8.20).

torchrun's `host` is `socket.getfqdn()` (`gb-r02-c03.cluster.local`, a pod's
`svc.cluster.local` name), NCCL prints `gethostname()`, peers appear as IPs, a one-node job may
say `localhost`. A name is matched exactly, then by its first DNS label, then as an address a
line of the job tied to a host. A name that maps to no node of the job is no node: a job's log
can print anything, and a node outside the job is never evidence.
"""

from __future__ import annotations

import ipaddress
import re

_LOOPBACK = {"localhost", "localhost.localdomain", "ip6-localhost"}
# What an IPv4/IPv6 address (with an optional IPv6 zone) can be made of: the cheap test first, since
# a dense log asks this of every host-like word and `ipaddress` costs ~0.5 s per 128 MiB of them.
_ADDRESS_SHAPE = re.compile(r"[0-9A-Fa-f.:]{2,45}(?:%[^%\s]{1,32})?")
_LONGEST = 80


def _is_address(name: str) -> bool:
    if len(name) > _LONGEST or not _ADDRESS_SHAPE.fullmatch(name) or not ("." in name or ":" in name):
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class NodeNames:
    def __init__(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes
        self._exact = {n.lower(): n for n in nodes}
        labels: dict[str, list[str]] = {}
        for n in nodes:
            labels.setdefault(n.lower().split(".")[0], []).append(n)
        self._label = {k: v[0] for k, v in labels.items() if len(v) == 1}
        self.addresses: dict[str, str] = {}

    def learn_address(self, address: str, host: str | None) -> None:
        """An address a line of the job tied to a host (NCCL's bootstrap interface)."""
        node = self.canonical(host)
        if node and _is_address(address):
            self.addresses.setdefault(address, node)

    def canonical(self, name: str | None) -> str | None:
        """The job's node that `name` means, or None; any name passes when the job's nodes are unknown."""
        if not name:
            return None
        if not self.nodes:
            return name
        key = name.strip().lower().rstrip(".")
        if node := self._exact.get(key):
            return node
        if _is_address(key):
            if ipaddress.ip_address(key).is_loopback and len(self.nodes) == 1:
                return self.nodes[0]
            return self.addresses.get(key)
        if key in _LOOPBACK:
            return self.nodes[0] if len(self.nodes) == 1 else None
        return self._label.get(key.split(".")[0])
