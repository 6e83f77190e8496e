"""The errors loopdbg shows to a person: each one is a single sentence that names the culprit.

Every error a user can cause (a bad file, a bad input, a kernel that fails inside a loop) is a
``LoopdbgError``; the command line prints its message and exits non-zero instead of a traceback.
Messages may quote names from files as they are: the command line escapes the whole sentence once,
where it prints it (``loopdbg.text.safe``), so it stays one line and obeys no control character.
"""

from __future__ import annotations


class LoopdbgError(Exception):
    """Base class: ``str(err)`` is the one sentence shown to the user."""

    exit_code = 2


class ModelError(LoopdbgError):
    """The model files (.xml, .bin, .onnx) are malformed or inconsistent."""


class UnsupportedOperation(ModelError):
    """A layer's (type, version) has no kernel in loopdbg."""


class InputError(LoopdbgError):
    """The inputs given for a model do not match what the model expects."""


class RunError(LoopdbgError):
    """Running the model failed: a kernel raised, a concatenation's shapes varied, ...

    ``loop_path``, ``iteration`` and ``layer`` locate the failure when it happened inside a loop body.
    """

    def __init__(self, message: str, *, loop_path: str | None = None,
                 iteration: int | None = None, layer: str | None = None):
        super().__init__(message)
        self.loop_path = loop_path
        self.iteration = iteration
        self.layer = layer


class ResourceLimitError(RunError):
    """A run went past a limit the user set (memory budget for scan outputs, ...)."""
