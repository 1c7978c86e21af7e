"""The rule pack's vocabulary: what each family of evidence means to the classifier, advice, progress lines.

The classifier never tests a rule's name: it asks a family for a trait (`crash`, `save_start`,
`teardown`, ...) or its label. Traits and advice conditions are a fixed vocabulary, because code
acts on them; families, labels' advice and progress patterns are data an operator may extend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

_Compiled = TypeVar("_Compiled")

LABELS = (
    "cdmm_checkpoint_segfault",
    "checkpoint_segfault",
    "app_segfault",
    "app_exception",
    "nccl_timeout",
    "fabric_error",
    "gpu_xid",
    "oom_killed",
    "time_limit",
    "preempted",
    "cancelled",
    "node_fail",
    "success",
    "unknown",
)
TRAITS = frozenset(
    {
        "crash",  # a process died of a crash signal
        "dataloader_worker",  # ... and it was a DataLoader worker that a rank forked (§8.11)
        "checkpoint_frame",  # a stack frame of checkpoint writing
        "crc_frame",  # a frame of the zip writer's CRC-32 chain (§0)
        "forked_writer",  # a frame of a forked checkpoint writer process
        "teardown",  # NCCL teardown: watchdog thread, libnccl, ncclCommAbort, taking the process down (§8.4, §8.10)
        "save_start",
        "save_end",
        "async_save",  # checkpoint save markers (§8.12)
        "nccl_failure",  # an NCCL/IB error on a rank: a crash after it on that rank is a consequence (§8.10)
        "watchdog",  # a rank's watchdog timeout report: ranks missing from these point at a node (§8.8)
        "gpu_error",  # a rank's CUDA error: names the rank of a GPU fault (§8.16)
        "xid",  # a GPU Xid: fatal or not by its number (the pack's `xid:` section)
        "link",  # a link fault: names a node, not a rank
        "node_death",  # Slurm says a node died (§8.5)
        "stall",  # a storage or task stall in a node's kernel log
        "torchrun_entry",  # a line of a torchrun failure-summary entry (§8.13)
        "world_size",  # the job's world size
        "task_end",  # srun's word on how a task ended other than by a crash (Terminated, Aborted, exit code)
        "proven_crash",  # a crash its launcher or runtime proves: it counts in a COMPLETED 0:0 job (§8.21)
        "crash_stack",  # faulthandler's stack header: after a crash line, it proves the crash (§8.21)
        "pid_rank",  # a line that says which pid is which rank (NCCL Init COMPLETE, DeepSpeed spawn, §8.18)
        "host_address",  # a line that says which address is which host (§8.20)
        "sync_point",  # a line every node prints at one instant: node clock offsets come from these (§8.22)
        "peer_lost",  # a rank saw a peer go away: the consequence of a fault elsewhere, never a bound on it
        "traceback",  # where a Python traceback starts (§8.26)
        "logged_exception",  # an exception a logger printed at ERROR
        "exception",  # a rank's terminal exception: the app_exception fault
        "exception_kind",  # an exception's kind (the rule's `kind` field)
        "node_fault",  # ... a kind that points at the node (report node findings)
        "consequence",  # an exception other ranks raise after a peer went away: never a root
        "slurm_end",  # Slurm's words on why it ended the job: a verdict only where accounting's state agrees (§8.27)
    }
)
# When an advice line applies; each names something the verdict knows.
CONDITIONS = frozenset({"nccl_followed", "forked_writer", "dataloader_worker", "root_node", "no_root_node"})
KIND_CONDITION = "exc:"  # `exc:<kind>`: the app_exception's kind (kinds are data: any rule's `kind` field)


class VocabularyError(ValueError):
    """A families/advice/progress entry is invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Family:
    name: str
    label: str | None = None  # the label when an event of this family decides
    says: str = ""  # what ranks did, for summaries: "hit the NCCL watchdog timeout"
    traits: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AdviceLine:
    """One line of advice; `[[...]]` parts are left out when a placeholder in them is unknown."""

    text: str
    when: str | None = None


def parse_families(doc: dict[str, Any], where: str) -> dict[str, Family]:
    into: dict[str, Family] = {}
    section = doc.get("families") or {}
    if not isinstance(section, dict):
        raise VocabularyError(f"{where}: key 'families' must be a mapping of family names")
    for name, spec in section.items():
        key = f"families.{name}"
        spec = spec or {}
        if not isinstance(spec, dict) or set(spec) - {"label", "says", "traits"}:
            raise VocabularyError(f"{where}: key '{key}' must be a mapping with label, says and traits only")
        label = spec.get("label")
        if label is not None and label not in LABELS:
            raise VocabularyError(f"{where}: key '{key}.label' must be one of {', '.join(LABELS)}, got {label!r}")
        traits = spec.get("traits") or []
        if not isinstance(traits, list) or not set(traits) <= TRAITS:
            raise VocabularyError(f"{where}: key '{key}.traits' must be a list of: {', '.join(sorted(TRAITS))}")
        says = spec.get("says", "")
        if not isinstance(says, str):
            raise VocabularyError(f"{where}: key '{key}.says' must be a string")
        into[str(name)] = Family(str(name), label, says, frozenset(traits))
    return into


def parse_advice(
    doc: dict[str, Any], where: str, template_errors: Callable[[str], list[str]]
) -> dict[str, tuple[AdviceLine, ...]]:
    """`advice:` by label; `template_errors` says what is wrong with a line's placeholders."""
    into: dict[str, tuple[AdviceLine, ...]] = {}
    section = doc.get("advice") or {}
    if not isinstance(section, dict):
        raise VocabularyError(f"{where}: key 'advice' must be a mapping of labels")
    for label, lines in section.items():
        key = f"advice.{label}"
        if label not in LABELS:
            raise VocabularyError(f"{where}: key '{key}' is not a label ({', '.join(LABELS)})")
        if not isinstance(lines, list):
            raise VocabularyError(f"{where}: key '{key}' must be a list")
        into[str(label)] = tuple(
            _advice_line(item, f"{key}[{i}]", where, template_errors) for i, item in enumerate(lines)
        )
    return into


def _advice_line(item: Any, key: str, where: str, template_errors: Callable[[str], list[str]]) -> AdviceLine:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or set(item) - {"text", "when"}:
        raise VocabularyError(f"{where}: key '{key}' must be a string or a mapping with 'text' and 'when'")
    when = item.get("when")
    if when is not None and when not in CONDITIONS and not _kind_condition(when):
        raise VocabularyError(f"{where}: key '{key}.when' must be one of {', '.join(sorted(CONDITIONS))} or exc:<kind>")
    if problems := template_errors(item["text"]):
        raise VocabularyError(f"{where}: key '{key}': {problems[0]}")
    return AdviceLine(item["text"], when)


def _kind_condition(when: Any) -> bool:
    kind = when[len(KIND_CONDITION) :] if isinstance(when, str) and when.startswith(KIND_CONDITION) else ""
    return bool(kind) and kind.replace("_", "").isalnum() and kind.isascii() and kind.islower()


def parse_progress(
    doc: dict[str, Any], where: str, compile_pattern: Callable[[str], _Compiled], key: str = "progress"
) -> tuple[_Compiled, ...] | None:
    """`progress:` regexes of lines that say training went on (or `launchers:`, the launcher
    prefixes in front of a line); None when the file has no such key."""
    if key not in doc:
        return None
    items = doc[key]
    if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
        raise VocabularyError(f"{where}: key '{key}' must be a list of regexes")
    try:
        return tuple(compile_pattern(p) for p in items)
    except ValueError as exc:
        raise VocabularyError(f"{where}: key '{key}' holds an invalid regex: {exc}") from None


def check_declared(rule_families: dict[str, str], families: dict[str, Family], where: str) -> None:
    """Every rule's family (rule name -> family) is declared."""
    for rule, family in rule_families.items():
        if family not in families:
            raise VocabularyError(f"{where} (rule '{rule}'): family '{family}' is not declared under 'families'")
