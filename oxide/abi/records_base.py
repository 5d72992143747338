"""``Record``: ``typing.NamedTuple`` without its class-building cost, for the records a first
launch builds classes of (the manifest's, the loader's; issue 28, cold start).

``class ParamSpec(Record): name: str; ndim: int = 1`` makes the same tuple subclass
``typing.NamedTuple`` would (``_fields``, ``_field_defaults``, ``__match_args__``, ``_make``,
``_replace``, ``_asdict``, a field-by-field ``repr``, positional or keyword construction with the
defaults, pickling, the class body's methods and properties), but builds it in about 0.02 ms
instead of 0.19: ``collections.namedtuple`` compiles a ``__new__`` from source for each class
(``eval``) and ``typing`` checks each annotation. Here ``__new__`` is one function for every
record: all fields given positionally is ``tuple.__new__`` and a length check, anything else
binds the arguments to the fields in Python (a few microseconds; these records are built when a
manifest is read, not per launch). Type checkers see ``typing.NamedTuple`` (the modules import
it under ``TYPE_CHECKING``).
"""
from operator import itemgetter
from typing import Any

try:
    from collections import _tuplegetter  # type: ignore[attr-defined]  # what namedtuple's fields are
except ImportError:  # another Python implementation
    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)

__all__ = ["Record"]

_tuple_new = tuple.__new__


def _record_new(cls: Any, *args: Any, **kwargs: Any) -> Any:
    fields = cls._fields
    if not kwargs and len(args) == len(fields):
        return _tuple_new(cls, args)
    if len(args) > len(fields):
        required = len(fields) - len(cls._field_defaults)
        takes = f"from {required + 1} to {len(fields) + 1}" if required < len(fields) else f"{len(fields) + 1}"
        raise TypeError(f"{cls.__name__}.__new__() takes {takes} positional arguments but {len(args) + 1} were given")
    values = list(args)
    defaults = cls._field_defaults
    missing = []
    for name in fields[len(args):]:
        if name in kwargs:
            values.append(kwargs.pop(name))
        elif name in defaults:
            values.append(defaults[name])
        else:
            missing.append(name)
    if kwargs:
        name = next(iter(kwargs))
        if name in fields:
            raise TypeError(f"{cls.__name__}.__new__() got multiple values for argument {name!r}")
        raise TypeError(f"{cls.__name__}.__new__() got an unexpected keyword argument {name!r}")
    if missing:  # worded as Python words it
        names = [repr(m) for m in missing]
        listed = names[0] if len(names) == 1 else (", ".join(names[:-1]) + ("," if len(names) > 2 else "")
                                                    + " and " + names[-1])
        raise TypeError(f"{cls.__name__}.__new__() missing {len(missing)} required positional argument"
                        f"{'s' if len(missing) > 1 else ''}: {listed}")
    return _tuple_new(cls, values)


def _make(cls: Any, iterable: Any) -> Any:
    result = _tuple_new(cls, iterable)
    if len(result) != len(cls._fields):
        raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
    return result


def _replace(self: Any, **kwargs: Any) -> Any:
    result = self._make([kwargs.pop(name, value) for name, value in zip(self._fields, self)])
    if kwargs:
        raise ValueError(f"Got unexpected field names: {list(kwargs)!r}")
    return result


def _repr(self: Any) -> str:
    return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self))})"


def _asdict(self: Any) -> dict[str, Any]:
    return dict(zip(self._fields, self))


def _getnewargs(self: Any) -> tuple[Any, ...]:
    return tuple(self)


class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if ns.get("__module__") == __name__ and name == "Record":
            return super().__new__(mcls, name, bases, ns)
        annotations = ns.get("__annotations__", {})
        fields = tuple(annotations)
        defaults: dict[str, Any] = {}
        for f in fields:
            if f in ns:
                defaults[f] = ns[f]
            elif defaults:
                raise TypeError(f"Non-default namedtuple field {f} cannot follow default field"
                                f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}")
        body = {k: v for k, v in ns.items() if k not in annotations}
        body.update(__slots__=(), _fields=fields, _field_defaults=defaults, __match_args__=fields,
                    __annotations__=dict(annotations), __new__=_record_new, _make=classmethod(_make),
                    _replace=_replace, __repr__=_repr, _asdict=_asdict, __getnewargs__=_getnewargs)
        if body.get("__doc__") is None:
            body["__doc__"] = f"{name}({', '.join(fields)})"
        for i, f in enumerate(fields):
            body[f] = _tuplegetter(i, f"Alias for field number {i}")
        return type.__new__(type, name, (tuple,), body)


class Record(metaclass=_RecordMeta):
    """Base of a record class; see the module's docstring."""
