"""The conditional status claim every worker step starts with, and the moves a status may make.

One `UPDATE … SET <field> = <to> WHERE <the queryset's conditions> AND <field> = <from_>`:
of two deliveries of the same task only one moves the row, so a step is safe to run
twice, and a job that lost the race writes nothing.

An app registers the table of moves a status field may make (`allow_moves`); a claim,
and a status set on a loaded row (`move`), then refuse any move the table does not list.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Model, QuerySet

_UNSET: Any = object()
_MANY = (list, tuple, set, frozenset)
_MOVES: dict[tuple[type[Model], str], Mapping[Any, Iterable[Any]]] = {}


class NotAMove(Exception):
    """A status change that the field's table of moves does not list: a bug, never a user's error."""


def allow_moves(model: type[Model], field: str, moves: Mapping[Any, Iterable[Any]]) -> None:
    """`moves[a]`: the statuses `field` may move to from `a` (staying where it is is no move)."""
    _MOVES[(model, field)] = moves


def check_move(model: type[Model], field: str, from_: Any, to: Any) -> None:
    moves = _MOVES.get((model, field))
    if moves is not None and from_ != to and to not in moves.get(from_, ()):
        raise NotAMove(f"{model.__name__}.{field} may not move from {str(from_)!r} to {str(to)!r}")


def move(instance: Model, field: str, to: Any) -> None:
    """Set a loaded row's status (saved by the caller), if its table lists the move."""
    check_move(type(instance), field, getattr(instance, field), to)
    setattr(instance, field, to)


def claim(
    queryset: QuerySet,
    *,
    field: str = "status",
    from_: Any = _UNSET,
    not_from: Any = _UNSET,
    to: Any,
    **also_set: Any,
) -> bool:
    """Move the rows of `queryset` whose `field` is `from_` (one value or several), or is not
    one of `not_from`, to `to`, writing `also_set` with it; True when a row was claimed."""
    if (from_ is _UNSET) == (not_from is _UNSET):
        raise TypeError("claim() takes from_ or not_from, exactly one of them")
    if from_ is not _UNSET:
        froms = list(from_) if isinstance(from_, _MANY) else [from_]
        claimed = queryset.filter(**{f"{field}__in": froms})
    else:
        froms = [value for value in _MOVES.get((queryset.model, field), ()) if value not in not_from]
        claimed = queryset.exclude(**{f"{field}__in": not_from})
    for value in froms:
        check_move(queryset.model, field, value, to)
    return bool(claimed.update(**{field: to}, **also_set))
