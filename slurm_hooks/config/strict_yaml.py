"""The config's YAML: plain data only, built in time and memory linear in the file, every failure a YAMLError.

yaml.SafeLoader constructs no objects, but a file can still make it pay or raise what no caller
expects: an alias repeats a whole subtree (nine anchors of nine aliases each are 300 bytes and 9**9
nodes to whoever walks them: the "billion laughs"), each nesting level is a recursion, and a
constructor raises its own ValueError or TypeError (`2026-02-31` read as a date, `!!int zz`,
`? [a, b]` as a key). So this loader refuses, at the node, with its line and column:
- aliases (an anchor alone is then harmless: nothing can repeat it);
- nesting deeper than MAX_DEPTH, before the next level is composed;
- tags outside the JSON-like core (`!!binary`, `!!timestamp`, `!!python/...`, `!!set`); text that
  only looks like a date or a merge key (`<<`) stays a string, which the key and type checks name;
- keys that are not strings, and a key given twice in one mapping;
and a core constructor that still fails (`!!int zz`) becomes a YAMLError at that node.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 32  # the config nests 3 deep (ncore_sources[0].argv); Python's recursion limit is ~1000
_CORE = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))


def _refuse(problem: str, node_or_event: yaml.Node | yaml.Event) -> yaml.MarkedYAMLError:
    mark: Any = node_or_event.start_mark
    return yaml.MarkedYAMLError(None, None, problem, mark)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :][:40] if tag.startswith(_CORE) else tag[:40]


class ConfigLoader(yaml.SafeLoader):
    # Only the core's implicit types: `2026-02-31` or `<<` is a string, never a date or a merge.
    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads it from the class
        first: [(tag, regexp) for tag, regexp in resolvers if tag in ALLOWED_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise _refuse("aliases (*name) are not allowed in the configuration", event)
        if self.depth >= MAX_DEPTH:
            raise _refuse(f"nested deeper than {MAX_DEPTH} levels", event)
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if node is not None and node.tag not in ALLOWED_TAGS:
            raise _refuse(f"tag {_short_tag(node.tag)} is not allowed in the configuration", node)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except Exception:  # a core constructor's own error (`!!int zz`, `!!float x`): said at its node
            raise _refuse(f"not a valid {_short_tag(node.tag)} value", node) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise _refuse("keys must be strings", key_node)
            if key in seen:
                raise _refuse(f"key {key[:60]!r} appears twice in one mapping", key_node)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """The document, or a YAMLError: never another exception, never an alias, never deeper than MAX_DEPTH."""
    loader = ConfigLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def describe(exc: yaml.YAMLError) -> str:
    """Where and what, never the input's text: PyYAML's own str() quotes the offending line."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        said = " ".join(part for part in (exc.context, exc.problem) if part)  # "expected a single document ..."
        return f"line {mark.line + 1}, column {mark.column + 1}: {said}"
    if isinstance(exc, yaml.reader.ReaderError):
        return f"character #x{exc.character:04x} at position {exc.position} is not allowed in YAML"
    return type(exc).__name__
