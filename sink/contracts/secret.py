"""``SecretValue``: the only in-memory carrier of a resolved credential.

It is deliberately hostile to every path by which a value leaks: ``repr``/``str``/``format`` show
``SecretValue(***)``; pickling, copying into another process and JSON encoding are refused; it has
no ``__dict__``; and it cannot be declared as a pydantic field, so no plan, journal or evidence
model can ever carry one. Only ``reveal()`` — called at the last moment by a transport adapter —
returns the value.
"""

from __future__ import annotations

import hmac
from typing import Any, NoReturn, final

_REDACTED = "SecretValue(***)"


@final
class SecretValue:
    __slots__ = ("__value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("SecretValue wraps a str")
        object.__setattr__(self, "_SecretValue__value", value)

    def reveal(self) -> str:
        """The secret itself; use only to build the outgoing request, never to log or store it."""
        value: str = object.__getattribute__(self, "_SecretValue__value")
        return value

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("SecretValue is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("SecretValue is immutable")

    def __repr__(self) -> str:
        return _REDACTED

    def __str__(self) -> str:
        return _REDACTED

    def __format__(self, format_spec: str) -> str:
        return _REDACTED

    def __bool__(self) -> bool:
        return bool(self.reveal())

    def __len__(self) -> int:
        return len(self.reveal())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretValue):
            return NotImplemented
        return hmac.compare_digest(self.reveal().encode(), other.reveal().encode())

    __hash__ = None  # type: ignore[assignment]  # equality by secret content must not be hashable

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("SecretValue cannot be pickled or serialised")

    def __reduce__(self) -> NoReturn:
        raise TypeError("SecretValue cannot be pickled or serialised")

    def __getstate__(self) -> NoReturn:
        raise TypeError("SecretValue cannot be pickled or serialised")

    def __copy__(self) -> SecretValue:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> SecretValue:
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> NoReturn:
        # Refusing schema generation makes "a model with a SecretValue field" a class-definition
        # error, so no serialisable contract can carry a resolved credential by accident.
        raise TypeError("SecretValue must not be a field of a serialisable model")
