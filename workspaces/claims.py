"""The conditional status claim every worker step starts with.

One `UPDATE … SET <field> = <to> WHERE <the queryset's conditions> AND <field> = <from_>`:
of two deliveries of the same task only one moves the row, so a step is safe to run
twice, and a job that lost the race writes nothing.
"""

from typing import Any

from django.db.models import QuerySet

_UNSET: Any = object()
_MANY = (list, tuple, set, frozenset)


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
        claimed = queryset.filter(**{f"{field}__in" if isinstance(from_, _MANY) else field: from_})
    else:
        claimed = queryset.exclude(**{f"{field}__in": not_from})
    return bool(claimed.update(**{field: to}, **also_set))
