"""Loop paths: how the engine names each loop of a model, and how a person picks one by name.

A loop's path is the names of the loops around it and its own, joined by "/" (``outer/inner``);
a path already taken (two loops of one name in one graph) gets ``#<layer id>`` after it. Every
face that takes a loop by name (``--loop``, breakpoints, watches, run-to) accepts the whole path
or its last part, the loop's short name.
"""

from __future__ import annotations

from typing import Container


def loop_path(parent: str, name: str, layer_id: int, taken: Container[str]) -> str:
    """The path of the loop ``name`` (layer ``layer_id``) found in the body at ``parent``."""
    path = f"{parent}/{name}" if parent else name
    return f"{path}#{layer_id}" if path in taken else path


def short_name(path: str) -> str:
    """The last part of a loop path."""
    return path.rsplit("/", 1)[-1]


def matches_loop(path: str, name: str, layer_name: str | None = None) -> bool:
    """Whether ``name`` picks the loop at ``path``: its path, its short name, or (when given)
    the name of its layer, which may itself hold a "/"."""
    return path == name or short_name(path) == name or (layer_name is not None
                                                         and layer_name == name)
