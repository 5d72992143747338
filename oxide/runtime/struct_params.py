"""Struct and vector kernel arguments: the host value of an ``@oxide.struct`` or vector parameter
turned into the scalar slot values it is passed as (``oxide.abi.params``: one slot per scalar
field, in declaration order).

A struct parameter takes an instance of its ``@oxide.struct`` class (fields that are structs
hold instances, fields that are vectors hold tuples of their lanes) or a NumPy structured scalar
(``numpy.void``) with the same field names; a vector parameter takes a tuple or list of its
lanes (what ``ox.f32x4(...)`` gives on the host) or a 1-D NumPy array of that length. Each
scalar is checked and converted as a scalar parameter of its type is.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Union

from oxide.runtime.launch import ScalarError, scalar_converter

if TYPE_CHECKING:
    from oxide.runtime.manifest import ParamSpec

__all__ = ["FieldsConverter"]

# a struct's fields by name, a vector's lanes by "0", "1", ...; a leaf is its scalar converter
_Tree = dict[str, Union["_Tree", Callable[[Any], Any]]]


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:37] + '...' if len(text) > 40 else text}"


def _is_vector(tree: _Tree) -> bool:
    return all(name.isdigit() for name in tree)


class FieldsConverter:
    """Converts the argument of one struct or vector parameter into its slot values (a list);
    a bad argument is a ``ScalarError`` that reads after "parameter 'p' of k "."""

    __slots__ = ("type_name", "tree")

    def __init__(self, spec: ParamSpec) -> None:
        self.type_name = spec.dtype
        self.tree: _Tree = {}
        for path, dtype in spec.fields:
            node = self.tree
            *parents, leaf = path.split(".")
            for name in parents:
                child = node.setdefault(name, {})
                assert isinstance(child, dict)
                node = child
            node[leaf] = scalar_converter(dtype)

    def __call__(self, value: Any) -> list[Any]:
        out: list[Any] = []
        self._flatten(value, self.tree, "", out)
        return out

    def _expected(self, tree: _Tree, path: str) -> str:
        if _is_vector(tree):
            return f"a vector of {len(tree)} lanes (a tuple, a list or a 1-D NumPy array)"
        names = ", ".join(tree)
        if not path:
            return f"the struct {self.type_name} (an instance of its @oxide.struct class, or a NumPy record with the fields {names})"
        return f"a struct with the fields {names}"

    def _flatten(self, value: Any, tree: _Tree, path: str, out: list[Any]) -> None:
        where = f" (field {path})" if path else ""
        items = self._items(value, tree, path)
        if items is None:
            raise ScalarError(f"needs {self._expected(tree, path)}{where}; got {_describe(value)}")
        for (name, sub), item in zip(tree.items(), items):
            inner = f"{path}.{name}" if path else name
            if isinstance(sub, dict):
                self._flatten(item, sub, inner, out)
                continue
            try:
                out.append(sub(item))
            except ScalarError as e:
                raise ScalarError(f"(field {inner}) {e}") from None

    def _items(self, value: Any, tree: _Tree, path: str) -> list[Any] | None:
        """The values of ``tree``'s fields in ``value``, or None if its shape is not ``tree``'s."""
        names = list(tree)
        if _is_vector(tree):
            if isinstance(value, (tuple, list)):
                return list(value) if len(value) == len(names) else None
            shape = getattr(value, "shape", None)
            if type(value).__module__ == "numpy" and shape == (len(names),):
                return list(value)
            return None
        fields = getattr(type(value), "__dataclass_fields__", None)
        if fields is not None and getattr(type(value), "__oxide_struct__", False):
            if list(fields) != names or (not path and type(value).__name__ != self.type_name):
                return None
            return [getattr(value, name) for name in names]
        record_names = getattr(getattr(value, "dtype", None), "names", None)  # a NumPy structured scalar's
        if type(value).__module__ == "numpy" and record_names is not None and getattr(value, "shape", ()) == ():
            return [value[name] for name in names] if list(record_names) == names else None
        return None


def _register_converter() -> None:
    from oxide.runtime.arguments import SEVERAL_SLOTS

    SEVERAL_SLOTS.add(FieldsConverter)


_register_converter()
