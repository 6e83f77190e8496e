"""Messages of the UI: the engine worker reports stops through these, and panels ask for changes.

A panel never calls the app: it posts one of these, which bubbles up to the app, and the app
changes the session and shows every panel the result.
"""

from __future__ import annotations

from textual.message import Message


class Stopped(Message):
    """The session stopped (a step, a breakpoint, the end, an error): refresh every panel."""

    def __init__(self, stop, command: str) -> None:
        super().__init__()
        self.stop = stop
        self.command = command


class Busy(Message):
    """A command started running in the worker thread (``running``) or ended."""

    def __init__(self, running: bool, command: str = "") -> None:
        super().__init__()
        self.running = running
        self.command = command


class PromptShown(Message):
    """The prompt bar opened (``open``) or closed."""

    def __init__(self, open: bool) -> None:
        super().__init__()
        self.open = open


class _Numbered(Message):
    """A panel asks the app to change the breakpoint or watch numbered ``number``."""

    def __init__(self, number: int) -> None:
        super().__init__()
        self.number = number


class ToggleBreakpoint(_Numbered):
    """Enable a disabled breakpoint, or disable an enabled one."""


class EditBreakpoint(_Numbered):
    """Ask for a new condition for the breakpoint (in a prompt)."""


class IgnoreBreakpoint(_Numbered):
    """Ask how many of the breakpoint's next hits to ignore (in a prompt)."""


class DeleteBreakpoint(_Numbered):
    """Delete the breakpoint."""


class DeleteWatch(_Numbered):
    """Delete the watch."""


class InspectValue(Message):
    """Show the full value of ``name`` (an expression: a value's name, or ``t["odd name"]``)
    in the Inspector."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class GoTo(Message):
    """Move the session: ``command`` is a session command ("next", "back", "jump"); ``target``
    (a ``loopdbg.debug.jump.Target``) says where a jump goes."""

    def __init__(self, command: str, target=None) -> None:
        super().__init__()
        self.command = command
        self.target = target


class GroupsShown(Message):
    """A panel opened or closed groups of loop ``path``'s body (``opened``: the group scopes
    open now), or found layer ``layer_id`` in it: the other panels showing that body open the
    same groups (and show the layer). ``origin`` is the panel that changed them."""

    def __init__(self, origin, path: str, opened: frozenset, layer_id: int | None = None) -> None:
        super().__init__()
        self.origin = origin
        self.path = path
        self.opened = opened
        self.layer_id = layer_id
