"""The rule pack: log signatures as data (YAML), loaded, validated and merged with overrides."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

ROLES = ("primary", "symptom", "marker", "frame", "context")
SOURCES = ("log", "kernel", "any")


class RulePackError(ValueError):
    """A rule file is unreadable or invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    role: str
    source: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    fields: dict[str, str] = field(default_factory=dict)
    priority: int = 0

    def applies_to(self, source_kind: str) -> bool:
        return self.source in ("any", source_kind)


@dataclass(frozen=True)
class XidPolicy:
    fatal: frozenset[int]
    fatal_at_or_above: int

    def is_fatal(self, xid: int, known: frozenset[int]) -> bool:
        return xid in self.fatal or (xid not in known and xid >= self.fatal_at_or_above)


@dataclass(frozen=True)
class Ordering:
    simultaneous_s: float = 2.0
    window_margin_s: float = 120.0
    crash_merge_s: float = 60.0
    frame_lines: int = 200


@dataclass(frozen=True)
class RulePack:
    rules: tuple[Rule, ...]
    ordering: Ordering
    xid: XidPolicy
    xid_known: frozenset[int]
    advice: dict[str, tuple[str, ...]]
    sources: tuple[str, ...]

    def keywords(self, source_kind: str) -> list[str]:
        seen: dict[str, None] = {}
        for rule in self.rules:
            if rule.applies_to(source_kind):
                seen.update(dict.fromkeys(rule.keywords))
        return list(seen)


def _require(doc: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind):
        raise RulePackError(f"{where}: key '{key}' must be a {kind.__name__}, got {value!r}")
    return value


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
    if not keywords or not all(isinstance(k, str) and k for k in keywords):
        raise RulePackError(f"{where}: key 'keywords' must be a non-empty list of non-empty strings")
    try:
        regex = re.compile(_require(raw, "pattern", str, where))
    except re.error as exc:
        raise RulePackError(f"{where}: key 'pattern' is not a valid regex: {exc}") from None
    fields = raw.get("fields") or {}
    if not isinstance(fields, dict):
        raise RulePackError(f"{where}: key 'fields' must be a mapping")
    priority = raw.get("priority", 0)
    if not isinstance(priority, int):
        raise RulePackError(f"{where}: key 'priority' must be an integer, got {priority!r}")
    return Rule(
        name=name,
        family=_require(raw, "family", str, where),
        role=role,
        source=source,
        keywords=tuple(keywords),
        regex=regex,
        fields={str(k): str(v) for k, v in fields.items()},
        priority=priority,
    )


def _load_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RulePackError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise RulePackError(f"{where}: top level must be a mapping with a 'rules' list")
    return doc


def _int_list(doc: dict[str, Any], key: str, where: str) -> frozenset[int]:
    values = doc.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise RulePackError(f"{where}: key 'xid.{key}' must be a list of integers")
    return frozenset(values)


def load_rule_pack(extra_files: Iterable[str | Path] = ()) -> RulePack:
    """The shipped pack, then each operator file in order: same name replaces, new name adds."""
    default_text = resources.files(__package__).joinpath("default.yaml").read_text(encoding="utf-8")
    docs = [("default.yaml (shipped)", _load_yaml(default_text, "default.yaml (shipped)"))]
    for path in extra_files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RulePackError(f"{path}: cannot read rule file: {exc.strerror}") from None
        docs.append((str(path), _load_yaml(text, str(path))))

    by_name: dict[str, Rule | None] = {}
    ordering: dict[str, Any] = {}
    xid_doc: dict[str, Any] = {}
    advice: dict[str, tuple[str, ...]] = {}
    for where, doc in docs:
        rules = doc.get("rules", [])
        if not isinstance(rules, list):
            raise RulePackError(f"{where}: key 'rules' must be a list")
        for i, raw in enumerate(rules):
            rule = _parse_rule(raw, f"{where}: rules[{i}]")
            by_name[raw["name"]] = rule
        if "ordering" in doc:
            ordering.update(_require(doc, "ordering", dict, where))
        if "xid" in doc:
            xid_doc.update(_require(doc, "xid", dict, where))
        for label, lines in (doc.get("advice") or {}).items():
            if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
                raise RulePackError(f"{where}: key 'advice.{label}' must be a list of strings")
            advice[str(label)] = tuple(lines)

    try:
        order = Ordering(**{k: type(getattr(Ordering, k))(v) for k, v in ordering.items()})
    except (TypeError, ValueError, AttributeError) as exc:
        raise RulePackError(f"ordering: invalid key or value: {exc}") from None
    known = frozenset().union(*(_int_list(xid_doc, k, "xid") for k in ("fatal", "app", "consequence", "warning")))
    policy = XidPolicy(_int_list(xid_doc, "fatal", "xid"), int(xid_doc.get("fatal_at_or_above", 10**6)))
    return RulePack(
        rules=tuple(r for r in by_name.values() if r is not None),
        ordering=order,
        xid=policy,
        xid_known=known,
        advice=advice,
        sources=tuple(w for w, _ in docs),
    )
