"""Frozen dataclasses made from all their values at once, without a call
per field.

A frozen dataclass's generated `__init__` stores each field through
`object.__setattr__` (its own `__setattr__` refuses every assignment): a
call per field, for a `Row` 24 of them, and a claim reads a `Row` for every
row it takes. `maker(cls)` builds a twin of `cls` once: a plain, unfrozen
slots dataclass with the same fields in the same order, so the same slots
and layout, whose `__init__` stores each field directly. An instance is
made as the twin and then given its real class by `__class__` assignment,
which CPython allows between classes of the same layout (and checks, with a
TypeError, when they are not). What comes out is an ordinary instance of
`cls`: the same type, equal, hashed and refusing assignment like any other.

Only for frozen slots dataclasses whose `__init__` does nothing but store
its fields (each an argument or a default; no `__post_init__`): the twin
skips nothing else because there is nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["maker"]

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[..., T]:
    """A function making a `cls` from the same arguments, with the same
    defaults, as `cls(...)` itself."""
    fields = dataclasses.fields(cast(Any, cls))
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} is not a frozen slots dataclass")
    unset = [f for f in fields if not f.init and f.default is f.default_factory]
    if hasattr(cls, "__post_init__") or unset:
        raise TypeError(f"{cls.__name__} does more at init than store its fields")
    twin = dataclasses.make_dataclass(
        f"_{cls.__name__}Twin",
        [
            (
                f.name,
                f.type,
                dataclasses.field(
                    default=f.default,
                    default_factory=f.default_factory,
                    init=f.init,
                    kw_only=f.kw_only,
                ),
            )
            for f in fields
        ],
        slots=True,
        eq=False,
        repr=False,
        match_args=False,
    )
    if vars(twin)["__slots__"] != vars(cls)["__slots__"]:
        raise TypeError(f"{cls.__name__}'s slots are not its fields")

    def make(*values: Any, **named: Any) -> T:
        # typed by annotation, not `cast`: a call more for every instance
        made: T = twin(*values, **named)
        made.__class__ = cls
        return made

    make.__doc__ = f"A {cls.__name__}, as `{cls.__name__}(...)` makes one."
    return make
