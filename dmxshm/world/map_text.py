"""A map file's text, checked against :mod:`dmxshm.world.map_limits` before a document
is built from it.

- :func:`read_map_text` refuses a file over :data:`MAX_FILE_BYTES` by its size, before
  reading it.
- :func:`check_json_text` counts a JSON map's lists and objects and measures their
  nesting on the text (strings blanked), before :func:`json.loads` builds them:
  deep nesting would otherwise be a ``RecursionError``, and three million ``{}`` in
  10 MB some 200 MB of dicts. :data:`JSON_NUMBERS` makes the decoder hand back a
  :class:`RefusedNumber` for Infinity, NaN, a float that overflows and a number of
  more than :data:`MAX_NUMBER_CHARS` characters (a 5,000-digit integer is a
  ``ValueError`` in Python 3.11): the map's own checks then refuse it naming its
  field, as any other wrong value.
- :func:`check_yaml_events` walks a YAML file's parser events (no document is
  built) and refuses, naming the line and the field, nodes past
  :data:`MAX_YAML_NODES`, nesting past :data:`MAX_DEPTH`, aliases that would
  expand to more than :data:`MAX_ALIAS_NODES` nodes (a 517-byte file of nested
  aliases expands to a billion), and numbers that are not finite or are written
  too long.

Example:
    >>> check_json_text('{"tiles": [["grass"]]}', "m.json")
    >>> check_json_text("[" * 65 + "]" * 65, "m.json")
    Traceback (most recent call last):
    ...
    dmxshm.world.maperror.MapError: map m.json, line 1: field '(document)': nested more \
than 64 deep
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dmxshm.world.map_limits import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_JSON_CONTAINERS,
    MAX_NUMBER_CHARS,
    MAX_YAML_NODES,
    map_error,
)
from dmxshm.world.maperror import MapError


def read_map_text(path: Path) -> str:
    """The text of map file ``path``, refused by its size before it is read.

    Raises:
        MapError: the file is over :data:`MAX_FILE_BYTES`, cannot be read, or is not
            UTF-8.
    """
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise map_error(str(path), "(file)", f"{size} bytes; a map file holds at most "
                                f"{MAX_FILE_BYTES} ({MAX_FILE_BYTES // 1_000_000} MB)")
            data = f.read(MAX_FILE_BYTES + 1)  # the size may have lied (a file that grows)
    except OSError as exc:
        raise MapError(f"map {path}: cannot read it: {exc}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise map_error(str(path), "(file)", f"more than {MAX_FILE_BYTES} bytes; a map file "
                        f"holds at most {MAX_FILE_BYTES // 1_000_000} MB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MapError(f"map {path}: cannot read it: {exc}") from exc


# ----------------------------------------------------------------------------------------
# JSON

# JSON strings hold no raw newline. The closing quote is optional, so that every match
# that starts at a quote succeeds and each character is scanned once: required, an
# unterminated string made the engine retry from every later quote to the line's end
# (a line of '"' and 100,000 '\"' took minutes).
_JSON_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def check_json_text(text: str, source: str) -> None:
    """Refuse a JSON text of more than :data:`MAX_JSON_CONTAINERS` lists and objects, or
    nested more than :data:`MAX_DEPTH` deep, before it is decoded.

    Raises:
        MapError: naming the file and, for the nesting, the line.
    """
    bare = _JSON_STRING.sub('""', text)  # brackets inside strings are not structure
    containers = bare.count("[") + bare.count("{")
    if containers > MAX_JSON_CONTAINERS:
        raise map_error(source, "(document)", f"{containers} lists and objects; a JSON map "
                        f"holds at most {MAX_JSON_CONTAINERS}")
    depth = 0
    for m in _JSON_BRACKET.finditer(bare):  # at most 2 * MAX_JSON_CONTAINERS of them
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_DEPTH:
            raise map_error(source, "(document)", f"nested more than {MAX_DEPTH} deep",
                            bare.count("\n", 0, m.start()) + 1)


@dataclass(frozen=True)
class RefusedNumber:
    """A number in a JSON map that is refused: it is no ``int`` or ``float``, so the
    check of whatever field holds it refuses it (naming the field)."""

    text: str

    def __repr__(self) -> str:
        if len(self.text) > MAX_NUMBER_CHARS:
            return f"a number written with {len(self.text)} characters"
        return f"{self.text} (not a finite number)"


def _json_float(text: str) -> float | RefusedNumber:
    if len(text) > MAX_NUMBER_CHARS:
        return RefusedNumber(text)
    value = float(text)
    return value if math.isfinite(value) else RefusedNumber(text)


def _json_int(text: str) -> int | RefusedNumber:
    return RefusedNumber(text) if len(text) > MAX_NUMBER_CHARS else int(text)


JSON_NUMBERS: dict[str, Any] = {"parse_float": _json_float, "parse_int": _json_int,
                                "parse_constant": RefusedNumber}
"""Keyword arguments of :func:`json.loads` that refuse numbers (see the module's
docstring)."""


def loads_json(text: str, source: str) -> Any:
    """The document of a JSON map text, checked by :func:`check_json_text` first.

    Raises:
        MapError: naming the file, and the line and column where it is not JSON.
    """
    check_json_text(text, source)
    try:
        return json.loads(text, **JSON_NUMBERS)
    except json.JSONDecodeError as exc:
        raise MapError(f"map {source}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                       f"{exc.msg}") from exc


# ----------------------------------------------------------------------------------------
# YAML

_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_NUMBER_STARTS = "+-.0123456789"  # YAML 1.1's ints and floats begin with one of these


@dataclass
class YamlBudget:
    """A map's YAML nodes (:data:`MAX_YAML_NODES`) and alias expansions
    (:data:`MAX_ALIAS_NODES`), and how many its files have spent: the files of a
    layered folder share one."""

    node_limit: int = MAX_YAML_NODES
    alias_limit: int = MAX_ALIAS_NODES
    nodes: int = 0
    alias_nodes: int = 0


@dataclass
class _Open:
    """A YAML sequence or mapping whose end has not been reached."""

    anchor: str | None
    is_map: bool
    nodes: int = 1  # as copied: an alias counts what it names
    height: int = 1
    children: int = 0
    key: str = ""


def check_yaml_events(events: Iterable[Any], source: str,
                      budget: YamlBudget | None = None) -> None:
    """Refuse a YAML file, from its parser's events, before a document is composed.

    Args:
        events: ``yaml.parse(text, Loader=...)``.
        source: the file name for messages.
        budget: what the map has left (a layered folder's files share one); spent here.

    Raises:
        MapError: naming the file, the line and the field where a limit is passed: more
            than :data:`MAX_YAML_NODES` nodes in the map, nesting deeper than :data:`MAX_DEPTH`
            (aliases included), aliases bringing in more than :data:`MAX_ALIAS_NODES`
            nodes, an alias to an anchor not closed before it, a number not finite or
            written in more than :data:`MAX_NUMBER_CHARS` characters.
        yaml.YAMLError: the text is not YAML (from the parser).
    """
    import yaml
    from yaml.resolver import Resolver

    resolver = Resolver()
    budget = budget if budget is not None else YamlBudget()
    stack: list[_Open] = []
    closed: dict[str, tuple[int, int]] = {}  # anchor: (nodes, height)

    def field(key: str = "(key)") -> str:  # the field of the node the event begins
        parts = []
        for o in stack:
            if not o.is_map:
                parts.append(f"[{o.children}]")
            else:
                parts.append(("." if parts else "") + (o.key if o.children % 2 else key))
        return "".join(parts) or "(document)"

    def finish(nodes: int, height: int, anchor: str | None, label: str) -> None:
        if anchor is not None:
            closed[anchor] = (nodes, height)
        if stack:
            parent = stack[-1]
            if parent.is_map and parent.children % 2 == 0:
                parent.key = label
            parent.nodes += nodes
            parent.height = max(parent.height, height + 1)
            parent.children += 1

    for event in events:
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            o = stack.pop()
            finish(o.nodes, o.height, o.anchor, "(key)")
            continue
        if isinstance(event, yaml.DocumentStartEvent):
            closed.clear()  # anchors are a document's own
        if not isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent,
                                  yaml.MappingStartEvent)):
            continue
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in closed:
                raise map_error(source, field(), f"the alias *{event.anchor} names no anchor "
                                "closed before it (a node may not hold an alias to itself)",
                                line)
            nodes, height = closed[event.anchor]
            budget.alias_nodes += nodes
            if budget.alias_nodes > budget.alias_limit:
                raise map_error(source, field(), f"aliases expand to more than "
                                f"{budget.alias_limit} nodes; write the values out, or "
                                "fewer aliases", line)
            if len(stack) + height > MAX_DEPTH:
                raise map_error(source, field(), f"the alias *{event.anchor} nests more "
                                f"than {MAX_DEPTH} deep", line)
            finish(nodes, height, None, f"*{event.anchor}")
            continue
        budget.nodes += 1
        here = getattr(event, "value", "(key)")  # names a key by itself
        if budget.nodes > budget.node_limit:
            raise map_error(source, field(here), f"more than {budget.node_limit} nodes; a YAML "
                            "map holds at most that many (a layered folder's files together)",
                            line)
        if len(stack) >= MAX_DEPTH:
            raise map_error(source, field(here), f"nested more than {MAX_DEPTH} deep", line)
        if isinstance(event, yaml.ScalarEvent):
            _check_scalar(event, resolver, source, field, line)
            finish(1, 1, event.anchor, event.value[:40])
        else:
            if event.anchor is not None:
                closed.pop(event.anchor, None)
            stack.append(_Open(event.anchor, isinstance(event, yaml.MappingStartEvent)))


def _check_scalar(event: Any, resolver: Any, source: str, field: Any, line: int) -> None:
    import yaml

    tag = event.tag
    if tag is None or tag == "!":  # as the composer resolves it
        if not (event.implicit[0] and event.value[:1] in _NUMBER_STARTS):
            return  # a string: resolving every key and word would double the time
        tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag not in (_INT_TAG, _FLOAT_TAG):
        return
    value = event.value
    if len(value) > MAX_NUMBER_CHARS:
        raise map_error(source, field(), f"a number written with {len(value)} characters "
                        f"({value[:20]}...); at most {MAX_NUMBER_CHARS}", line)
    if tag == _FLOAT_TAG:
        text = value.replace("_", "").lower()
        try:
            ok = math.isfinite(float(text))
        except ValueError:  # YAML 1.1's 1:30.5 (sexagesimal) is finite
            ok = ":" in text
        if not ok:
            raise map_error(source, field(), f"{value} is not a finite number", line)
