"""Bounded readers for the files a user hands kvtier: assumption sets, model configs, hardware presets.

Every such file is read here and nowhere else, with limits that keep a hostile or
mistaken file from exhausting memory or time:

- only regular files are read (not ``/dev/zero``, a FIFO or a directory), and at most
  :data:`MAX_BYTES` of them: a larger file is refused after reading one byte more;
- YAML anchors and aliases are refused (a few hundred bytes of nested aliases expand
  to gigabytes: "billion laughs"), as are duplicate keys in YAML and JSON (the last
  one would silently win) and nesting deeper than :data:`MAX_DEPTH`;
- every failure is a :class:`~kvtier.errors.KvtierError` naming the file, on one line.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent

from kvtier.errors import KvtierError, show

MAX_BYTES = 1 << 20
"""Largest file read (bytes): 1 MiB, about 500 times the largest shipped config or assumption set."""

MAX_DEPTH = 32
"""Deepest nesting of mappings and lists accepted; the shipped files nest at most 4 deep."""


def read_text_bounded(path: str | Path, what: str, limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes.

    Parameters
    ----------
    path : str or Path
        The file.
    what : str
        What the file is, for messages: ``"assumptions file"``, ``"model config file"``.
    limit : int
        Largest size accepted (bytes); at most ``limit + 1`` bytes are ever read.

    Raises
    ------
    KvtierError
        ``<path>: <what> not found``, not a regular file, larger than ``limit``, not
        UTF-8, or unreadable.
    """
    where = show(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise KvtierError(f"{where}: {what} is not a regular file")
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise KvtierError(f"{where}: {what} not found") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise KvtierError(f"{where}: cannot read {what} ({exc.__class__.__name__})") from None
    if len(data) > limit:
        raise KvtierError(f"{where}: {what} is larger than {limit:,} bytes; refused")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KvtierError(f"{where}: {what} is not UTF-8 text (byte {exc.start})") from None


class _Refused(yaml.YAMLError):
    """A YAML construct kvtier refuses; ``line`` is 1-based."""

    def __init__(self, problem: str, line: int):
        super().__init__(problem)
        self.problem, self.line = problem, line


_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it (about ten times faster), else the pure-Python one."""


def _scan_events(text: str) -> None:
    """Refuse anchors, aliases and nesting deeper than :data:`MAX_DEPTH` before anything is built.

    The parser is an iterative state machine, so this pass is safe on any nesting; the
    composer and constructor that run afterwards recurse and would not be.
    """
    depth = 0
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused("YAML anchors and aliases (& and *) are not accepted", line)
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Refused(f"nested more than {MAX_DEPTH} levels deep", line)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1


class _StrictLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """A safe YAML loader that refuses a key appearing twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """PyYAML's hook for each mapping: refuse a duplicate key, then build it as usual."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: PyYAML reports it below
                continue
            if duplicate:
                raise _Refused(f"duplicate key {show(key, quote=True)}", key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path, what: str) -> Any:
    """Parse a YAML file read by :func:`read_text_bounded`; None if it holds only comments.

    Parameters
    ----------
    path : str or Path
        The file.
    what : str
        What the file is, for messages (see :func:`read_text_bounded`).

    Raises
    ------
    KvtierError
        As :func:`read_text_bounded`; ``<path>: <what> is empty``; malformed YAML (with
        its line); an anchor or alias, a duplicate key or nesting deeper than
        :data:`MAX_DEPTH` (with its line).
    """
    text = read_text_bounded(path, what)
    where = show(path)
    if not text.strip():
        raise KvtierError(f"{where}: {what} is empty")
    try:
        _scan_events(text)
        return yaml.load(text, Loader=_StrictLoader)  # a safe loader: no arbitrary objects
    except _Refused as exc:
        raise KvtierError(f"{where}: {exc.problem} (line {exc.line})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        detail = f" ({show(problem)})" if problem else ""
        raise KvtierError(f"{where}: malformed YAML{at}{detail}") from None
    except ValueError as exc:  # a date like 2024-13-45, an integer of more than 4300 digits
        raise _unreadable_value(where, exc) from None


def load_json(path: str | Path, what: str, where: str | None = None) -> Any:
    """Parse a JSON file read by :func:`read_text_bounded`.

    Parameters
    ----------
    path : str or Path
        The file.
    what : str
        What the file is, for messages (see :func:`read_text_bounded`).
    where : str, optional
        How messages name the file when not by its path (a preset's name).

    Raises
    ------
    KvtierError
        As :func:`read_text_bounded`; malformed JSON (with line and column); a duplicate
        key; nesting deeper than :data:`MAX_DEPTH`.
    """
    text = read_text_bounded(path, what)
    where = where or show(path)
    too_deep = f"{where}: nested more than {MAX_DEPTH} levels deep"

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise KvtierError(f"{where}: duplicate key {show(key, quote=True)}")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise KvtierError(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise _unreadable_value(where, exc) from None
    except RecursionError:  # nesting of about 1000 levels stops the parser itself
        raise KvtierError(too_deep) from None
    if _depth(data) > MAX_DEPTH:
        raise KvtierError(too_deep)
    return data


def _unreadable_value(where: str, exc: ValueError) -> KvtierError:
    """The error for a value the parser cannot build, with Python's reason up to its advice."""
    return KvtierError(f"{where}: cannot read a value ({show(str(exc).split(';')[0])})")


def _depth(data: Any) -> int:
    """How deeply lists and mappings nest in ``data`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:  # deeper than that is refused anyway: stop looking
                stack.extend((child, level + 1) for child in children)
    return deepest
