"""Incremental aggregates: each has init, add (one row), merge (two states, for sessions) and result.

States are plain Python values (numbers, tuples, lists, sets) so a runtime snapshot pickles
without any class of this module. Rows are ordered by (event time, arrival sequence): that is
the order of collect_list and the meaning of first / last.
"""

from __future__ import annotations

import math
import typing as t

from sqlwin.runtime.model import AggregateSpec, RuntimeConfigError


def order_key(time: int | None, seq: int) -> tuple:
    """Event-time order with arrival order on ties; rows without a time sort first, by arrival."""
    return (-math.inf if time is None else time, seq)


class Aggregate:
    name = ""
    needs_arg = True
    takes_arg2 = False
    takes_order = False

    def __init__(self, spec: AggregateSpec):
        self.arg = spec.arg
        self.arg2 = spec.arg2

    def value(self, values: tuple) -> t.Any:
        return values[self.arg]

    def init(self) -> t.Any:
        return None

    def add(self, state: t.Any, time: int | None, seq: int, values: tuple) -> t.Any:
        raise NotImplementedError

    def merge(self, a: t.Any, b: t.Any) -> t.Any:
        raise NotImplementedError

    def result(self, state: t.Any) -> t.Any:
        return state


class Count(Aggregate):
    name = "count"
    needs_arg = False  # count(*) when arg is None

    def init(self) -> int:
        return 0

    def add(self, state, time, seq, values):
        return state + (1 if self.arg is None or values[self.arg] is not None else 0)

    def merge(self, a, b):
        return a + b


class _Fold(Aggregate):
    """Aggregates that fold non-null values with a binary function; None until the first value."""

    def combine(self, a: t.Any, b: t.Any) -> t.Any:
        raise NotImplementedError

    def add(self, state, time, seq, values):
        v = values[self.arg]
        if v is None:
            return state
        return v if state is None else self.combine(state, v)

    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return self.combine(a, b)


class Sum(_Fold):
    name = "sum"

    def combine(self, a, b):
        return a + b


class Min(_Fold):
    """NaN is larger than every number, as Spark orders it: the minimum is NaN only when all are."""

    name = "min"

    def combine(self, a, b):
        if a != a:  # NaN
            return b
        return b if b < a else a


class Max(_Fold):
    """NaN is larger than every number, as Spark orders it: one NaN makes the maximum NaN."""

    name = "max"

    def combine(self, a, b):
        if a != a or b != b:
            return a if a != a else b
        return b if b > a else a


class Avg(Aggregate):
    name = "avg"

    def init(self):
        return (0, 0)

    def add(self, state, time, seq, values):
        v = values[self.arg]
        return state if v is None else (state[0] + v, state[1] + 1)

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])

    def result(self, state):
        return state[0] / state[1] if state[1] else None


class CollectList(Aggregate):
    """Non-null values (as Spark's collect_list) in event-time order, ties in arrival order.

    With `order` (`array_agg(v ORDER BY k [DESC] [NULLS FIRST|LAST], ...)`) the values are sorted
    by those keys instead, as SQL sorts; rows the keys tie on keep event-time order. ORDER BY
    the recorded arrival column gives arrival order (Bytewax's `ordered=False`).
    """

    name = "collect_list"
    takes_order = True

    def __init__(self, spec: AggregateSpec):
        super().__init__(spec)
        self.order = spec.order

    def init(self):
        return []

    def add(self, state, time, seq, values):
        v = values[self.arg]
        if v is not None:
            keys = tuple(values[index] for index, _, _ in self.order)
            state.append((order_key(time, seq), v, keys) if keys else (order_key(time, seq), v))
        return state

    def merge(self, a, b):
        return a + b

    def result(self, state):
        items = sorted(state, key=lambda item: item[0])
        # Stable sorts, least significant key first; reverse=True keeps ties in their order.
        for position in reversed(range(len(self.order))):
            _, descending, nulls_first = self.order[position]
            nulls_low = nulls_first != descending  # where NULLs go before a DESC reversal

            def key(item, position=position, nulls_low=nulls_low):
                v = item[2][position]
                return ((v is not None) if nulls_low else (v is None), v)

            items.sort(key=key, reverse=descending)
        return [item[1] for item in items]


class First(Aggregate):
    """The value of the earliest row by event time (arrival order on ties); NULLs are values."""

    name = "first"

    def wins(self, new: tuple, old: tuple) -> bool:
        return new[0] < old[0]

    def add(self, state, time, seq, values):
        return self.merge(state, (order_key(time, seq), values[self.arg]))

    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return b if self.wins(b, a) else a

    def result(self, state):
        return None if state is None else state[1]


class Last(First):
    name = "last"

    def wins(self, new, old):
        return new[0] > old[0]


def _spark_less(a: t.Any, b: t.Any) -> bool:
    """a < b as Spark orders values: NaN is larger than every number and equal to itself."""
    if a != a:
        return False
    return b != b or a < b


def _spark_equal(a: t.Any, b: t.Any) -> bool:
    return a == b or (a != a and b != b)


class MinBy(Aggregate):
    """values[arg] at the row with the smallest values[arg2] (NaN the largest, as Spark orders);
    ties go to the earliest row."""

    name = "min_by"
    takes_arg2 = True

    def better(self, a: t.Any, b: t.Any) -> bool:
        return _spark_less(a, b)

    def add(self, state, time, seq, values):
        ordering = values[self.arg2]
        if ordering is None:
            return state
        return self.merge(state, (ordering, order_key(time, seq), values[self.arg]))

    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        if self.better(b[0], a[0]) or (_spark_equal(b[0], a[0]) and b[1] < a[1]):
            return b
        return a

    def result(self, state):
        return None if state is None else state[2]


class MaxBy(MinBy):
    name = "max_by"

    def better(self, a, b):
        return _spark_less(b, a)


class CountDistinct(Aggregate):
    name = "count_distinct"

    def init(self):
        return set()

    def add(self, state, time, seq, values):
        v = values[self.arg]
        if v is not None:
            state.add(_hashable(v))
        return state

    def merge(self, a, b):
        return a | b

    def result(self, state):
        return len(state)


def _hashable(v: t.Any) -> t.Any:
    """Arrays and maps arrive as lists / dicts: count them by content."""
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


class Filtered(Aggregate):
    """`agg(...) FILTER (WHERE c)`: `inner` sees only the rows whose values[filter] is true (not
    false, not NULL)."""

    def __init__(self, inner: Aggregate, index: int):
        self.inner = inner
        self.index = index
        self.name = inner.name
        self.init, self.merge, self.result = inner.init, inner.merge, inner.result

    def add(self, state, time, seq, values):
        keep = values[self.index]
        if keep is None or keep != keep or not keep:  # NULL (None, or NaN from pandas) or false
            return state
        return self.inner.add(state, time, seq, values)


AGGREGATES: dict[str, type[Aggregate]] = {
    cls.name: cls
    for cls in (Count, Sum, Min, Max, Avg, CollectList, First, Last, MinBy, MaxBy, CountDistinct)
}
ALIASES = {"mean": "avg", "collect": "collect_list", "first_value": "first", "last_value": "last"}


def make_aggregates(specs: t.Sequence[AggregateSpec], more: t.Mapping[str, type] | None = None) -> list[Aggregate]:
    """Check every spec and build its implementation; errors name the aggregate. `more`: aggregates
    built on this module elsewhere, by name (a windowed join's rows, runtime/join.py)."""
    built = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, AggregateSpec):
            raise RuntimeConfigError(f"Aggregate #{i + 1} must be an AggregateSpec, got {spec!r}")
        name = ALIASES.get(spec.func.lower(), spec.func.lower())
        cls = AGGREGATES.get(name) or (more or {}).get(name)
        if cls is None:
            raise RuntimeConfigError(
                f"Aggregate {spec.func} is not supported by the streaming window runtime",
                hint=", ".join(sorted(AGGREGATES)))
        _check_args(cls, spec)
        aggregate = cls(spec)
        if spec.filter is not None:
            if not isinstance(spec.filter, int) or spec.filter < 0:
                raise RuntimeConfigError(f"Aggregate {spec.func}: its filter must be a value index >= 0, "
                                         f"got {spec.filter!r}")
            aggregate = Filtered(aggregate, spec.filter)
        built.append(aggregate)
    return built


def _check_args(cls: type[Aggregate], spec: AggregateSpec) -> None:
    for what, index in (("argument", spec.arg), ("second argument", spec.arg2)):
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeConfigError(f"Aggregate {spec.func}: {what} must be a value index >= 0, got {index!r}")
    if cls.needs_arg and spec.arg is None:
        raise RuntimeConfigError(f"Aggregate {spec.func} needs an argument")
    if cls.takes_arg2 and spec.arg2 is None:
        raise RuntimeConfigError(f"Aggregate {spec.func} needs two arguments: the value and the ordering")
    if not cls.takes_arg2 and spec.arg2 is not None:
        raise RuntimeConfigError(f"Aggregate {spec.func} takes one argument, got a second")
    if spec.order and not cls.takes_order:
        raise RuntimeConfigError(f"Aggregate {spec.func} takes no ORDER BY",
                                 hint="ORDER BY inside collect_list / array_agg only")
    for item in spec.order:
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], int) and item[0] >= 0):
            raise RuntimeConfigError(
                f"Aggregate {spec.func}: an ORDER BY key must be (value index >= 0, descending, nulls_first), "
                f"got {item!r}")
