"""The ``ABSENT`` marker: a value that was not supplied at all.

JavaScript has two "no value" values, ``undefined`` and ``null``; the original
treats them alike almost everywhere (``??`` and ``== null``), but not
everywhere: ``succeed(h, id)`` (content ``undefined``) throws while
``succeed(h, id, null)`` stores ``"null"``.  Python has only ``None``, so an
argument that was *not passed* is represented by this marker, and ``None``
plays the part of ``null``.  See ``spec/README.md`` ("Absent values").
"""

from __future__ import annotations

import enum
from typing import Final, Literal, TypeAlias

__all__ = ["ABSENT", "Absent", "AbsentType"]


class Absent(enum.Enum):
    """Singleton type of :data:`ABSENT` (an enum so that type checkers can narrow it)."""

    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = Absent.ABSENT
AbsentType: TypeAlias = Literal[Absent.ABSENT]
