"""Immutable records made at every start without ``dataclasses``.

A frozen dataclass costs ~1.2 ms to define (Python 3.11 compiles each method it generates on its
own: ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``), and
``loopdbg run`` used to define some twenty before it read a byte of the model: ~25 ms of every
process. A ``Record`` subclass is defined like any class (its methods come compiled from its
``.pyc``): it writes its ``__slots__`` (its fields, in order, after its base's) and its
``__init__`` (taking them in that order, setting each with ``set_field``); this base gives it what
``@dataclass(frozen=True)`` gave:

* assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``;
* equal when of the same class with equal fields, hashed by its fields;
* ``repr`` as the dataclass's, ``Name(field=value, ...)``, without the fields in ``_hidden``;
* pickled and copied as a call of the class with its fields (``ir.model_cache`` keeps thousands
  of ports and edges: one tuple each);
* ``record.replace(field=value)``: a copy with some fields changed (``dataclasses.replace``).

The model's records whose dataclass fields are read (``dataclasses.fields``, ``replace``:
``Layer``, ``Graph``, ``SubGraph``, ``Model``) stay dataclasses, with methods of their own
(``ir.model._Fixed``) so that ``dataclass`` compiles none.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from operator import attrgetter

set_field = object.__setattr__  # what a subclass's __init__ sets its fields with


class Record:
    """The base of an immutable record whose ``__slots__`` are its fields (module docstring)."""

    __slots__ = ()
    _hidden: tuple[str, ...] = ()       # fields ``repr`` leaves out (a spec, a dict of arrays)
    _fields: tuple[str, ...] = ()
    _values = staticmethod(lambda record: ())   # the record's fields' values, a tuple

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields: list[str] = []          # (a subclass that adds none: its base's)
        for klass in reversed(cls.__mro__):
            fields += klass.__dict__.get("__slots__", ())
        cls._fields = fields = tuple(fields)
        if len(fields) == 1:
            get = attrgetter(fields[0])
            cls._values = staticmethod(lambda record: (get(record),))
        else:
            cls._values = staticmethod(attrgetter(*fields))

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values(self) == other._values(other)
        return NotImplemented

    def __hash__(self):
        return hash(self._values(self))

    def __repr__(self) -> str:
        hidden = self._hidden
        shown = ", ".join([f"{name}={value!r}" for name, value in zip(self._fields, self._values(self))
                           if name not in hidden])
        return f"{self.__class__.__qualname__}({shown})"

    def replace(self, **changes):
        """A record of the same class with ``changes`` made (``dataclasses.replace``'s)."""
        values = [changes.pop(name, value) for name, value in zip(self._fields, self._values(self))]
        if changes:
            raise TypeError(f"{self.__class__.__qualname__} has no field {next(iter(changes))!r}")
        return self.__class__(*values)

    def __reduce_ex__(self, protocol):
        return self.__class__, self._values(self)
