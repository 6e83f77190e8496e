"""The engine: execution plans, Loop/TensorIterator semantics, and the event stream of a run."""

from loopdbg.engine.events import (IterationDone, LoopFinished, LoopStarted, Notice,
                                   RunFinished)
from loopdbg.engine.runner import Engine

__all__ = ["Engine", "IterationDone", "LoopFinished", "LoopStarted", "Notice", "RunFinished"]
