"""oxide.abi.records_base.Record behaves as typing.NamedTuple does (issue 28, cold start: the
manifest's and loader's records are Records, cheaper to build at import)."""
import copy
import pickle
from typing import Any, NamedTuple

import pytest

from oxide.abi.manifest import ErrorSite, KernelSpec, ModuleManifest, ParamSpec
from oxide.abi.records_base import Record
from oxide.abi.scalars import f32


class NT(NamedTuple):
    name: str
    kind: str
    ndim: int = 1
    fields: tuple[str, ...] = ()

    @property
    def twice(self) -> int:
        return 2 * self.ndim


class R(Record):
    name: str
    kind: str
    ndim: int = 1
    fields: tuple[str, ...] = ()

    @property
    def twice(self) -> int:
        return 2 * self.ndim


def _both(make: Any) -> tuple[Any, Any]:
    out = []
    for cls in (NT, R):
        try:
            out.append(("ok", tuple(make(cls))))
        except (TypeError, ValueError) as e:
            out.append((type(e).__name__, str(e).replace(cls.__name__, "X")))
    return out[0], out[1]


@pytest.mark.parametrize("make", [
    lambda c: c("a", "b"),
    lambda c: c("a", "b", 3, ("x",)),
    lambda c: c(name="a", kind="b", fields=("y",)),
    lambda c: c("a", kind="b", ndim=2),
    lambda c: c("a"),
    lambda c: c(),
    lambda c: c(fields=()),
    lambda c: c("a", "b", 1, (), 5),
    lambda c: c("a", "b", name="c"),
    lambda c: c("a", "b", nope=1),
    lambda c: c("a", "b")._replace(ndim=7),
    lambda c: c("a", "b")._replace(nope=7),
    lambda c: c._make(["a", "b", 2, ()]),
    lambda c: c._make(["a", "b"]),
], ids=range(14))
def test_construction_and_errors_match_namedtuple(make: Any) -> None:
    nt, r = _both(make)
    assert nt == r


def test_record_api_matches_namedtuple() -> None:
    n, r = NT("a", "b", 3), R("a", "b", 3)
    assert r == n and hash(r) == hash(n) and isinstance(r, tuple)
    assert R._fields == NT._fields and R.__match_args__ == NT.__match_args__
    assert R._field_defaults == NT._field_defaults
    assert r._asdict() == n._asdict()
    assert repr(r) == repr(n).replace("NT(", "R(")
    assert (r.name, r.kind, r.ndim, r.fields, r.twice) == ("a", "b", 3, (), 6)
    assert R.__doc__ == "R(name, kind, ndim, fields)"
    with pytest.raises(AttributeError):
        r.name = "c"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.other = 1  # type: ignore[attr-defined]
    match r:
        case R(name, kind):
            assert (name, kind) == ("a", "b")
        case _:
            pytest.fail("no match")
    with pytest.raises(TypeError, match="Non-default namedtuple field late cannot follow default field"):
        class Bad(Record):  # noqa: F841
            early: int = 0
            late: int


def test_manifest_records_pickle_and_copy() -> None:
    p = ParamSpec("x", "slice", "f32")
    k = KernelSpec("k", "k_sym", (p,), {"T": "f32"})
    m = ModuleManifest("pkg.mod", "mod.py", "0" * 64, (k,), {"sm_90": "mod.sm_90.cubin"},
                       error_sites=(ErrorSite(0, "bounds", "k", "mod.py", 3, 4, "x[i]"),))
    for value in (p, k, m, f32):
        back = pickle.loads(pickle.dumps(value))
        assert back == value and type(back) is type(value)
        assert copy.deepcopy(value) == value
    assert ModuleManifest.from_json(m.to_json()) == m
    assert p.slot_count == 2 and p.is_view  # pointer, length and not p.is_scalar
