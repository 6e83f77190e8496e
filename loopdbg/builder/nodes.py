"""What a GraphBuilder records: tensors (output ports), Result references and nodes.

Plain records shared by ``graph`` (which makes them), ``control`` (which makes bodies and port
maps of them) and ``assemble`` (which turns them into a ``Model``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tensor:
    """One output port of a node in one graph: what ops take as inputs."""

    graph: Any = field(repr=False)          # the GraphBuilder that made it
    node: int
    port: int = 0

    @property
    def name(self) -> str:
        """The tensor's first name, else ``<layer name>`` (``.k`` for port k > 0)."""
        node = self.graph.nodes[self.node]
        names = node.out_names[self.port] if self.port < len(node.out_names) else []
        if names:
            return names[0]
        return node.name if self.port == 0 else f"{node.name}.{self.port}"


@dataclass(frozen=True)
class ResultRef:
    """A Result layer of a graph (from ``GraphBuilder.result``), for port maps and back edges."""

    graph: Any = field(repr=False)          # the GraphBuilder that made it
    node: int


@dataclass
class Node:
    """A layer as recorded: turned into a ``Layer`` by ``build()`` once types are inferred."""

    id: int
    name: str
    type: str
    version: str
    attrs: dict[str, str] = field(default_factory=dict)
    inputs: list[Tensor] = field(default_factory=list)
    n_out: int = 1
    out_names: list[list[str]] = field(default_factory=list)
    out_types: list[str | None] | None = None       # declared by the caller; None: infer
    out_shapes: list[tuple[int, ...] | None] | None = None
    declared: tuple[str | None, tuple[int, ...] | None] | None = None   # Parameter type, shape
    value: np.ndarray | None = None
    control: Any = None                               # LoopBuilder / IfBuilder
