"""The rule pack: log signatures as data (YAML), loaded, validated and merged with overrides."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from slurm_hooks.core.safeio import open_regular
from slurm_hooks.rules.advice import template_errors
from slurm_hooks.rules.families import (
    LABELS,
    AdviceLine,
    Family,
    VocabularyError,
    check_declared,
    parse_advice,
    parse_families,
    parse_progress,
)
from slurm_hooks.rules.limits import LimitError, check_yaml_shape, keyword_problem
from slurm_hooks.rules.model import ORDERING_MAX, Ordering, Rule, RulePack, RulePackError, XidPolicy
from slurm_hooks.rules.pattern import LinearPattern, PatternError, PatternTooLarge, compile_linear

__all__ = [
    "LABELS",
    "ORDERING_MAX",
    "AdviceLine",
    "Family",
    "Ordering",
    "Rule",
    "RulePack",
    "RulePackError",
    "XidPolicy",
    "load_rule_pack",
]

ROLES = ("primary", "symptom", "marker", "frame", "context")
SOURCES = ("log", "kernel", "any", "exception")  # exception: applied to traceback exception lines, never scanned
MAX_RULE_FILE = 4 << 20  # bytes; a rule file is a page of YAML
MAX_KEYWORDS = 5000  # distinct keywords in a pack: past ~20,000 no linear-time prefilter stays fast


def _require(doc: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise RulePackError(f"{where}: key '{key}' must be a {kind.__name__}, got {value!r}")
    return value


def _pattern(raw: dict[str, Any], key: str, where: str) -> LinearPattern:
    try:
        return compile_linear(_require(raw, key, str, where))
    except PatternTooLarge as exc:
        raise RulePackError(f"{where}: key '{key}' is too costly to run: {exc}") from None
    except PatternError as exc:
        raise RulePackError(f"{where}: key '{key}' is not a valid regex: {exc}") from None


def _parse_rule(raw: Any, where: str) -> Rule | None:
    if not isinstance(raw, dict):
        raise RulePackError(f"{where}: each rule must be a mapping, got {raw!r}")
    name = _require(raw, "name", str, where)
    where = f"{where} (rule '{name}')"
    if raw.get("enabled", True) is False:
        return None
    role = _require(raw, "role", str, where)
    if role not in ROLES:
        raise RulePackError(f"{where}: key 'role' must be one of {', '.join(ROLES)}, got {role!r}")
    source = raw.get("source", "any")
    if source not in SOURCES:
        raise RulePackError(f"{where}: key 'source' must be one of {', '.join(SOURCES)}, got {source!r}")
    keywords = _require(raw, "keywords", list, where)
    if not keywords or not all(isinstance(k, str) and k and "\n" not in k and "\r" not in k for k in keywords):
        raise RulePackError(f"{where}: key 'keywords' must be a non-empty list of non-empty one-line strings")
    fields_ = raw.get("fields") or {}
    if not isinstance(fields_, dict):
        raise RulePackError(f"{where}: key 'fields' must be a mapping")
    priority = raw.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool) or abs(priority) > 10**6:
        raise RulePackError(f"{where}: key 'priority' must be an integer, got {priority!r}")
    if source == "kernel" and isinstance(raw.get("pattern"), str) and not raw["pattern"].startswith("^"):
        # anchored by construction: a kernel rule matches the message the kernel starts, never text
        # a process put inside one (a segfault line's file name or comm) (log-signatures §8.28)
        raw = {**raw, "pattern": f"^(?:{raw['pattern']})"}
    regex = _pattern(raw, "pattern", where)
    return Rule(
        name=name,
        family=_require(raw, "family", str, where),
        role=role,
        source=source,
        keywords=tuple(keywords),
        regex=regex,
        fields={str(k): str(v) for k, v in fields_.items()},
        priority=priority,
        unless=_pattern(raw, "unless", where) if "unless" in raw else None,
    )


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        check_yaml_shape(text, _SAFE_LOADER)  # parser events only: a bomb is refused before it is built
        # libyaml's parser where PyYAML has it (10x faster on the shipped pack, which every
        # diagnose loads); it builds the same safe types as yaml.safe_load
        doc = yaml.load(text, Loader=_SAFE_LOADER)
    except LimitError as exc:
        raise RulePackError(f"{where}: refused: {exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise RulePackError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise RulePackError(f"{where}: top level must be a mapping with a 'rules' list")
    return doc


def _int_list(doc: dict[str, Any], key: str, where: str) -> frozenset[int]:
    values = doc.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise RulePackError(f"{where}: key 'xid.{key}' must be a list of integers")
    return frozenset(values)


def _ordering(values: dict[str, Any]) -> Ordering:
    kinds = {f.name: f.type for f in fields(Ordering)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key not in kinds:
            raise RulePackError(f"ordering: unknown key 'ordering.{key}' (known: {', '.join(kinds)})")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not 0 <= value <= ORDERING_MAX:
            raise RulePackError(
                f"ordering: key 'ordering.{key}' must be a number from 0 to {ORDERING_MAX}, got {value!r}"
            )
        out[key] = int(value) if kinds[key] in ("int", int) else float(value)
    return Ordering(**out)


@dataclass
class _Merged:
    """What the files say so far, later files overriding earlier ones."""

    rules: dict[str, Rule | None] = field(default_factory=dict)
    ordering: dict[str, Any] = field(default_factory=dict)
    xid: dict[str, Any] = field(default_factory=dict)
    advice: dict[str, tuple[AdviceLine, ...]] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)
    progress: tuple[LinearPattern, ...] = ()
    progress_counters: tuple[LinearPattern, ...] = ()
    launchers: tuple[LinearPattern, ...] = ()


def _merge(merged: _Merged, doc: dict[str, Any], where: str) -> None:
    """Validate one file whole, then fold it in: a bad file changes nothing."""
    rules = doc.get("rules", [])
    if not isinstance(rules, list):
        raise RulePackError(f"{where}: key 'rules' must be a list")
    parsed: dict[str, Rule | None] = {}
    for i, raw in enumerate(rules):
        rule = _parse_rule(raw, f"{where}: rules[{i}]")  # raises unless raw is a mapping with a name
        parsed[raw["name"]] = rule
    try:
        families = {**merged.families, **parse_families(doc, where)}
        advice = parse_advice(doc, where, template_errors)
        progress = parse_progress(doc, where, compile_linear)
        counters = parse_progress(doc, where, compile_linear, key="progress_counters")
        launchers = parse_progress(doc, where, compile_linear, key="launchers")
        check_declared({name: rule.family for name, rule in parsed.items() if rule}, families, where)
    except (VocabularyError, PatternError) as exc:
        raise RulePackError(str(exc)) from None
    ordering = {**merged.ordering, **(_require(doc, "ordering", dict, where) if "ordering" in doc else {})}
    xid = {**merged.xid, **(_require(doc, "xid", dict, where) if "xid" in doc else {})}
    try:
        _ordering(ordering)
        _xid(xid)
    except RulePackError as exc:
        raise RulePackError(f"{where}: {exc}") from None
    keywords = {k for r in {**merged.rules, **parsed}.values() if r is not None for k in r.keywords}
    if len(keywords) > MAX_KEYWORDS:
        raise RulePackError(
            f"{where}: key 'keywords': the pack would hold {len(keywords)} distinct keywords, more than {MAX_KEYWORDS}"
        )
    for rule in parsed.values():
        if rule is not None and (problem := keyword_problem(rule.keywords, rule.source)):
            raise RulePackError(f"{where} (rule '{rule.name}'): key 'keywords': {problem}")
        if rule is not None and (problem := _trust_problem(rule)):
            raise RulePackError(f"{where} (rule '{rule.name}'): {problem}")
    merged.rules.update(parsed)
    merged.ordering, merged.xid = ordering, xid
    merged.advice.update(advice)
    merged.families = families
    merged.progress = merged.progress if progress is None else progress
    merged.progress_counters = merged.progress_counters if counters is None else counters
    merged.launchers = merged.launchers if launchers is None else launchers


def _trust_problem(rule: Rule) -> str | None:
    """A rule is trusted by where its lines come from (log-signatures §8.28): one that decides a
    verdict reads either the kernel's lines or the job's, never both (a job can print any line).
    Checked after every other key, so a file's first error is the one it is told."""
    if rule.source == "any" and rule.role in ("primary", "symptom"):
        return f"key 'source': a {rule.role} rule must say 'source: kernel' or 'source: log' (a job can print any line)"
    return None


def _xid(doc: dict[str, Any]) -> tuple[XidPolicy, frozenset[int]]:
    known = frozenset().union(*(_int_list(doc, k, "xid") for k in ("fatal", "app", "consequence", "warning")))
    above = doc.get("fatal_at_or_above", 10**6)
    if not isinstance(above, int) or isinstance(above, bool):
        raise RulePackError(f"xid: key 'xid.fatal_at_or_above' must be an integer, got {above!r}")
    return XidPolicy(_int_list(doc, "fatal", "xid"), above), known


def _read_rule_file(path: Path) -> str:
    try:  # an operator's path (links followed), but a FIFO or device there is refused, never read
        with open_regular(path, follow=True) as fh:
            raw = fh.read(MAX_RULE_FILE + 1)
    except OSError as exc:
        raise RulePackError(f"{path}: cannot read rule file: {exc.strerror}") from None
    if len(raw) > MAX_RULE_FILE:
        raise RulePackError(f"{path}: rule file larger than {MAX_RULE_FILE} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RulePackError(f"{path}: rule file is not UTF-8 (byte {exc.start})") from None


def load_rule_pack(extra_files: Iterable[str | Path] = (), strict: bool = False) -> RulePack:
    """The shipped pack, then each operator file in order: same name replaces, new name adds.

    A bad operator file is left out whole and said in `skipped`; the hooks go on with the rest.
    strict (the `diagnose` CLI): it raises RulePackError naming the file and the key instead.
    """
    shipped = "default.yaml (shipped)"
    merged = _Merged()
    _merge(
        merged, _load_yaml(resources.files(__package__).joinpath("default.yaml").read_text("utf-8"), shipped), shipped
    )
    sources, skipped = [shipped], []
    for path in extra_files:
        try:
            _merge(merged, _load_yaml(_read_rule_file(Path(path)), str(path)), str(path))
        except RulePackError as exc:
            if strict:
                raise
            skipped.append(f"rule file left out: {exc}")
            continue
        sources.append(str(path))
    policy, known = _xid(merged.xid)
    return RulePack(
        rules=tuple(r for r in merged.rules.values() if r is not None),
        ordering=_ordering(merged.ordering),
        xid=policy,
        xid_known=known,
        advice=merged.advice,
        sources=tuple(sources),
        skipped=tuple(skipped),
        families=merged.families,
        progress=merged.progress,
        progress_counters=merged.progress_counters,
        launchers=merged.launchers,
    )
