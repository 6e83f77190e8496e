"""What every part of the IR reader shares: the reading context (the file named in messages,
the weights, the warnings, where in nested bodies it is), the tag and attribute synonyms of the
IR format, and small helpers to walk elements and read integer attributes with one-sentence
errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

from loopdbg.errors import ModelError
from loopdbg.files.read import map_regular

# Element tags and attributes with their synonyms (docs/semantics.md rule 15).
FROM_LAYER = ("from-layer", "from-operation")
TO_LAYER = ("to-layer", "to-operation")
INTERNAL_ID = ("internal_layer_id", "internal_operation_id")


class Weights:
    """The .bin file, mapped (not read) on first use and shared by the top graph and every body."""

    def __init__(self, path: Path):
        self.path = path
        self._data: memoryview | None = None

    @property
    def exists(self) -> bool:
        return self._data is not None or os.path.lexists(self.path)

    def get(self, who: str, file: str) -> memoryview:
        if self._data is None:
            if not os.path.lexists(self.path):
                raise ModelError(f"{file}: {who} needs weights but {self.path} does not exist.")
            try:
                self._data = map_regular(self.path, ModelError)
            except ModelError as err:
                raise ModelError(f"{file}: {who} needs weights, but {err}") from None
        return self._data


class Context:
    """What every nested reader needs: the file name for messages, the weights, the warnings.

    ``scope`` is appended to layer descriptions inside bodies ("in the body of layer 4 'loop'
    (Loop)"), so that an error deep in a nested body still says where it is. (A plain class: a
    dataclass costs ~1 ms of every start to define, ``ir.record``.)
    """

    def __init__(self, file: str, weights: Weights, warnings: list[str] | None = None,
                 scope: str = ""):
        self.file = file
        self.weights = weights
        self.warnings: list[str] = [] if warnings is None else warnings
        self.scope = scope

    def inside(self, loop_label: str, role: str = "body") -> "Context":
        where = "body" if role == "body" else role.replace("_", " ")
        return Context(self.file, self.weights, self.warnings,
                       f" in the {where} of {loop_label}{self.scope}")

    def fail(self, subject: str, problem: str) -> ModelError:
        """A one-sentence ModelError: ``<file>: <subject><scope> <problem>.``"""
        return ModelError(f"{self.file}: {subject}{self.scope} {problem}.")

    def failer(self, subject: str) -> Callable[[str], ModelError]:
        """``fail`` with the subject bound, for helpers that only know the problem."""
        return lambda problem: self.fail(subject, problem)

    def part_failer(self, label: str, part: str) -> Callable[[str], ModelError]:
        """Errors about one part of a layer: ``<file>: <label><scope>: <part> <problem>.``"""
        return lambda problem: ModelError(f"{self.file}: {label}{self.scope}: {part} {problem}.")


def layer_label(layer_id: object, name: str, type_: str) -> str:
    """The same wording as ``Layer.describe()``, usable before the Layer exists."""
    return f"layer {layer_id} '{name}' ({type_})"


def tagged_children(el, tags: tuple[str, ...]) -> Iterator:
    for child in el:
        if child.tag in tags:
            yield child


def first_child(el, *tags: str):
    for child in el:
        if child.tag in tags:
            return child
    return None


def attr_of(el, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = el.get(name)
        if value is not None:
            return value
    return None


def int_attr(text: str | None, attr: str, fail: Callable[[str], ModelError]) -> int:
    """Parse an integer attribute, or fail naming the attribute."""
    if text is None:
        raise fail(f"has no {attr} attribute")
    try:
        return int(text.strip())
    except ValueError:
        raise fail(f"has a non-integer {attr} '{text}'") from None
