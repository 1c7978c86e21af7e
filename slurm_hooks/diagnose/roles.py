"""Which events can be a root cause (primary) and which only follow one (symptom), per the rule pack."""

from __future__ import annotations

from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event


class Roles:
    def __init__(self, pack: RulePack) -> None:
        self.pack = pack

    def is_primary(self, ev: Event) -> bool:
        if ev.family == "xid":  # one rule for every Xid; its number decides (rule pack `xid:`)
            xid = ev.field_int("xid")
            return xid is not None and self.pack.xid.is_fatal(xid, self.pack.xid_known)
        return ev.role == "primary"

    def is_symptom(self, ev: Event) -> bool:
        return ev.role == "symptom" or (ev.family == "xid" and not self.is_primary(ev))
