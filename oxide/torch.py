"""PyTorch custom operators from Python functions that launch oxide kernels, in one declaration.

    import torch
    import oxide.torch

    @oxide.torch.op("mylib::saxpy", outputs={"out": oxide.torch.Out(like="x")})
    def saxpy(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        kernels.saxpy[kernels.saxpy.grid_for(x.numel()), 256](a, x, y, out)

    out = saxpy(2.0, x, y)          # torch.ops.mylib.saxpy(2.0, x, y) is the same operator

What the declaration gives, which a ``torch.library.custom_op`` needs written by hand:

- the schema, from the function's type hints (``torch.Tensor``, ``float``, ``int``, ``bool``,
  ``str``, ``list[int]``, optional ones); the outputs (the parameters named in ``outputs``) are
  not part of it: they are allocated before the function runs, from their :class:`Out`
  (a shape and dtype like an input's, or functions of the inputs), and returned; an output
  declared ``Out(..., returned=True)`` is made by the function itself (``torch.cat``,
  ``torch.addmm``) and returned by it, checked against its declaration;
- checks of the inputs (``inputs={"y": In(like="x")}``, dtypes, devices, ndim, ``check=``), run
  by the real kernel and the fake one, so a mixed dtype is an :class:`OpInputError`, eager or
  traced, and never a silent promotion;
- the fake (meta) kernel, from the same declarations: ``torch.compile`` traces the op without
  running it, so a function calling it compiles with ``fullgraph=True``;
- temporaries (``temporaries={"scratch": Temp(...)}``): allocated and passed, not returned;
- outputs autograd treats as constants (``Out(..., differentiable=False)``);
- mutated arguments (``mutates=``): written in place, declared in the schema (``Tensor(a!)``);
  an output is never an input or a view of one (custom operators cannot return aliases);
- autograd from ``backward=`` (``torch.library.register_autograd``): with no ``setup_context``
  the inputs and outputs are saved, and ``backward(ctx, *grads)`` reads them as
  ``ctx.inputs`` and ``ctx.outputs``.

A body for one device type (a CPU implementation beside the CUDA one) is declared with
``@the_op.register_kernel("cpu")``.

The launches inside run on PyTorch's current stream of the tensors' device (oxide's default),
so the op works inside ``torch.cuda.stream`` and CUDA graphs (``torch.compile(mode=
"reduce-overhead")``, ``torch.cuda.graph``).

Host overhead: a call in eager mode on plain tensors, outside any ``torch.compile`` trace,
dispatch or function mode and functorch transform, runs the function directly (what the
dispatcher would run); where a tensor requires grad, inside the same ``torch.autograd.Function``
that ``register_autograd`` gives the dispatcher's autograd kernel (an op without ``backward=``
takes the dispatcher then). Every other call goes through ``torch.ops``. PyTorch
is imported when the first op is declared, not when this module is.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

__all__ = ["op", "In", "Out", "Temp", "Op", "OpDeclarationError", "OpInputError"]


class OpDeclarationError(TypeError):
    """A declaration ``oxide.torch.op`` cannot turn into an operator; says where and why."""


class OpInputError(RuntimeError):
    """An op refused an input that its declaration (:class:`In`, ``check=``) does not allow: the
    message names the op, the input, what it got and what it needs. A ``RuntimeError``, what
    PyTorch raises for a tensor of the wrong dtype or device; raised by the real kernel and the
    fake one alike, so ``torch.compile`` and ``FakeTensorMode`` report it too."""


@dataclass(frozen=True)
class In:
    """What a tensor input must be; the op refuses anything else with an :class:`OpInputError`
    (never a silent promotion or copy).

    ``dtype``: a ``torch.dtype``, or a tuple of the dtypes allowed. ``device``: a device type
    (``"cuda"``, ``"cpu"``) or a device (``"cuda:1"``, ``torch.device(...)``). ``like``: the
    name of another tensor input whose dtype and device this one must have (``In(like="x")``:
    no mixed dtypes, no mixed devices). ``ndim``: the number of dimensions. An optional input
    passed as None is not checked, nor is a ``like`` that is None.
    """

    dtype: Any = None
    device: Any = None
    like: str | None = None
    ndim: int | None = None


@dataclass(frozen=True)
class Out:
    """How an output is allocated before the function runs.

    ``like``: the name of a tensor input whose shape, dtype and device the output takes.
    ``shape``: a function of inputs (its parameter names pick them) returning the shape, or the
    name of an input to take the shape of. ``dtype``: a ``torch.dtype``, or a function of
    inputs returning one. Each defaults to ``like``'s; ``like`` defaults to the first tensor
    input (which also gives the device).

    ``returned``: the function makes this output itself (``torch.cat(...)``, ``torch.addmm(...)``:
    a PyTorch call that allocates anyway) and returns it, instead of writing into one the op
    allocated: it is then not a parameter of the function, which returns the returned outputs
    (one tensor, or a tuple in declaration order). The op checks each against the declaration
    (a tensor of that shape, dtype and device, contiguous, not an input) and raises
    ``TypeError`` naming the output where one differs. A contiguous view of a fresh
    intermediate (``torch.addmm(...).view(n, -1)``, a block of rows of one) is taken, detached
    from the intermediate; a view of an input's memory or of another output's is not.

    ``layout``: ``"contiguous"`` (the default) or ``"preserve"``: the output keeps ``like``'s
    order of strides (``torch.empty_like``'s ``preserve_format``), so a channel-last input
    (``x.transpose(1, 2)`` of a contiguous tensor, or a slice of one) gets a dense channel-last
    output, as a C++ op writing into ``at::empty_like(x)`` does. Only with ``shape`` left to
    ``like``'s.

    ``differentiable=False``: autograd treats the output as a constant (an index, a mask, a count),
    as ``ctx.mark_non_differentiable`` does: it never requires grad, and ``backward`` receives
    zeros for it. An op whose outputs are all non-differentiable needs no ``backward=``.
    """

    like: str | None = None
    shape: Callable[..., Sequence[int]] | str | None = None
    dtype: Any = None
    returned: bool = False
    layout: str = "contiguous"
    differentiable: bool = True


@dataclass(frozen=True)
class Temp:
    """A temporary: a tensor the op allocates for its kernels (scratch, partial sums, a workspace)
    and passes to the function, but does not return. ``like``, ``shape`` and ``dtype`` as for
    :class:`Out` (contiguous); ``zeroed=True`` fills it with zeros first (an accumulator that
    kernels add into atomically), otherwise its contents are undefined. It is not part of the
    schema nor of the fake kernel, which runs no kernel."""

    like: str | None = None
    shape: Callable[..., Sequence[int]] | str | None = None
    dtype: Any = None
    zeroed: bool = False


def _torch() -> Any:
    return importlib.import_module("torch")


def _where(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{code.co_filename}:{code.co_firstlineno}"


class _Allocator:
    """One output's allocation: shape, dtype and device from the inputs, the same for the real
    kernel and the fake one (where the inputs are fake tensors with symbolic shapes)."""

    def __init__(self, name: str, out: Out, inputs: list[str], tensors: list[str], where: str,
                 role: str = "output") -> None:
        self.name = name
        self.returned = out.returned
        self.differentiable = out.differentiable

        def fail(what: str) -> OpDeclarationError:
            return OpDeclarationError(f"{where}: {role} {name!r}: {what}")

        like = out.like if out.like is not None else (tensors[0] if tensors else None)
        if like is None:
            raise fail("no tensor input to take the device from; declare it Out(like='<a tensor input>')")
        if like not in tensors:
            raise fail(f"like={like!r} is not a tensor input of the op (its tensor inputs: {', '.join(tensors) or 'none'})")
        self.like = inputs.index(like)
        if out.layout not in ("contiguous", "preserve"):
            raise fail(f"layout must be 'contiguous' or 'preserve'; got {out.layout!r}")
        if out.layout == "preserve" and (out.shape is not None or out.returned):
            raise fail("layout='preserve' takes like's shape and strides: leave shape= unset and returned=False")
        self.preserve = out.layout == "preserve"
        self.plain = out.shape is None and out.dtype is None  # empty_like: half the cost of torch.empty
        self.same_dtype = out.dtype is None
        self.shape_of: Callable[[Sequence[Any]], Any]
        self.dtype_of: Callable[[Sequence[Any]], Any]
        if out.shape is None:
            self.shape_of = lambda args: args[self.like].shape
        elif isinstance(out.shape, str):
            if out.shape not in tensors:
                raise fail(f"shape={out.shape!r} is not a tensor input of the op")
            index = inputs.index(out.shape)
            self.shape_of = lambda args: args[index].shape
        elif callable(out.shape):
            self.shape_of = self._from_inputs(out.shape, inputs, fail, "shape")
        else:
            raise fail(f"shape must be a function of the inputs or an input's name; got {out.shape!r}")
        torch = _torch()
        if out.dtype is None:
            self.dtype_of = lambda args: args[self.like].dtype
        elif isinstance(out.dtype, torch.dtype):
            dtype = out.dtype
            self.dtype_of = lambda args: dtype
        elif callable(out.dtype):
            self.dtype_of = self._from_inputs(out.dtype, inputs, fail, "dtype")
        else:
            raise fail(f"dtype must be a torch.dtype or a function of the inputs; got {out.dtype!r}")

    @staticmethod
    def _from_inputs(f: Callable[..., Any], inputs: list[str], fail: Callable[[str], Exception],
                     what: str) -> Callable[[Sequence[Any]], Any]:
        names = list(inspect.signature(f).parameters)
        unknown = [n for n in names if n not in inputs]
        if unknown:
            raise fail(f"the {what} function's parameters {unknown} are not inputs of the op "
                       f"(its inputs: {', '.join(inputs)})")
        picks = [inputs.index(n) for n in names]
        # one call a shape, no generator: an output's shape is computed on every call of the op
        if len(picks) == 1:
            (only,) = picks
            return lambda args: f(args[only])
        if len(picks) == 2:
            first, second = picks
            return lambda args: f(args[first], args[second])
        return lambda args: f(*[args[i] for i in picks])

    def allocate(self, torch: Any, args: Sequence[Any]) -> Any:
        """The output for the fake kernel (any tensors, symbolic shapes: no test that could guard)."""
        if self.preserve:
            return torch.empty_like(args[self.like], dtype=self.dtype_of(args))
        if self.plain:
            return torch.empty_like(args[self.like], memory_format=torch.contiguous_format)
        return torch.empty(tuple(self.shape_of(args)), dtype=self.dtype_of(args), device=args[self.like].device)

    def allocate_real(self, torch: Any, args: Sequence[Any]) -> Any:
        """The same output for real tensors, through the cheapest of PyTorch's calls (host time,
        H200 host, BENCHMARKS.md): ``new_empty`` takes the device and dtype from the tensor (1.6 µs
        less than ``torch.empty(..., device=t.device)``). A plain output (``like`` alone) is
        made by :meth:`Op._allocate`, which asks each input's contiguity once."""
        like = args[self.like]
        if self.same_dtype:
            return like.new_empty(tuple(self.shape_of(args)))
        return like.new_empty(tuple(self.shape_of(args)), dtype=self.dtype_of(args))

    def new_zeros(self, torch: Any, args: Sequence[Any]) -> Any:
        """A zero-filled allocation (a ``Temp(zeroed=True)``)."""
        return args[self.like].new_zeros(tuple(self.shape_of(args)), dtype=self.dtype_of(args))

    def check_returned(self, torch: Any, args: Sequence[Any], tensor_positions: Sequence[int], made: Any,
                       others: Sequence[Any]) -> Any:
        """A returned output against its declaration, what the fake kernel said it would be: a
        contiguous tensor of the declared shape, dtype and device that is no input. A view is
        taken where its memory is no input's and no other output's (``others``): a view of a
        fresh intermediate (``torch.addmm(...).view(...)``, a row block of one), returned
        detached (the same memory, no view of the intermediate), as the fake kernel's fresh
        tensor is. Returns the output."""
        like = args[self.like]
        if type(made) is torch.Tensor:
            shape = like.shape if self.plain else self.shape_of(args)
            dtype = like.dtype if self.same_dtype else self.dtype_of(args)
            if made.shape == tuple(shape) and made.dtype == dtype and made.is_contiguous() and made.device == like.device:
                if made._base is None:
                    for i in tensor_positions:
                        if args[i] is made:
                            break
                    else:
                        return made
                elif self._aliased(args, tensor_positions, made, others) is None:
                    return made.detach()
        self._refuse(torch, args, tensor_positions, made, others)

    @staticmethod
    def _aliased(args: Sequence[Any], tensor_positions: Sequence[int], made: Any, others: Sequence[Any]) -> str | None:
        """What a view's memory is also part of: "input" (an input's), "output" (another
        output's), or None (a fresh intermediate's)."""
        if made.numel() == 0:
            return None
        memory = made.untyped_storage().data_ptr()
        for i in tensor_positions:
            t = args[i]
            if t is not None and t.untyped_storage().nbytes() and t.untyped_storage().data_ptr() == memory:
                return "input"
        for t in others:
            if isinstance(t, type(made)) and t.numel() and t.untyped_storage().data_ptr() == memory:
                return "output"
        return None

    def _refuse(self, torch: Any, args: Sequence[Any], tensor_positions: Sequence[int], made: Any,
                others: Sequence[Any]) -> None:
        like = args[self.like]
        fresh = "a tensor the function made, or a view of one (not an input, nor a view of one)"
        aliased = (self._aliased(args, tensor_positions, made, others)
                   if isinstance(made, torch.Tensor) and made._base is not None else None)
        if not isinstance(made, torch.Tensor):
            what, expected = type(made).__name__, "a tensor the function made"
        elif any(made is a for a in args):
            what, expected = "one of the op's inputs", fresh
        elif aliased == "input":
            what, expected = "a view of one of the op's inputs", fresh
        elif aliased == "output":
            what, expected = "a view of another output's memory", "an output of its own (outputs never share memory)"
        elif type(made) is not torch.Tensor:
            what, expected = f"a {type(made).__name__}", "a plain torch.Tensor"
        else:
            shape = like.shape if self.plain else self.shape_of(args)
            dtype = like.dtype if self.same_dtype else self.dtype_of(args)
            what = (f"a tensor of shape {tuple(made.shape)}, {made.dtype} on {made.device}"
                    f"{'' if made.is_contiguous() else ', not contiguous'}")
            expected = f"a contiguous tensor of shape {tuple(shape)}, {dtype} on {like.device}"
        raise TypeError(f"output {self.name!r} (returned=True) is {what}; its declaration says {expected}")


def _input_checks(torch: Any, qualname: str, declared: Mapping[str, In], inputs: list[str], tensors: list[str],
                  where: str) -> list[Callable[[Sequence[Any]], None]]:
    """One check per declared constraint, each a function of the op's inputs that raises
    :class:`OpInputError`; the same list runs in the real kernel and in the fake one."""
    checks: list[Callable[[Sequence[Any]], None]] = []

    def fail(name: str, what: str) -> OpDeclarationError:
        return OpDeclarationError(f"{where}: inputs[{name!r}]: {what}")

    def refuse(name: str, got: str, needs: str) -> OpInputError:
        return OpInputError(f"{qualname}: input {name!r} is {got}; it needs {needs} (the op's declaration, {where})")

    for name, spec in declared.items():
        if not isinstance(spec, In):
            raise fail(name, f"expected an oxide.torch.In; got {spec!r}")
        if name not in tensors:
            raise fail(name, f"{name!r} is not a tensor input of the op (its tensor inputs: {', '.join(tensors) or 'none'})")
        at = inputs.index(name)
        if spec.dtype is not None:
            allowed = tuple(spec.dtype) if isinstance(spec.dtype, (tuple, list)) else (spec.dtype,)
            if not allowed or not all(isinstance(d, torch.dtype) for d in allowed):
                raise fail(name, f"dtype must be a torch.dtype or a tuple of them; got {spec.dtype!r}")
            needs = str(allowed[0]) if len(allowed) == 1 else "one of " + ", ".join(map(str, allowed))

            def dtype_check(args: Sequence[Any], at: int = at, name: str = name, allowed: tuple[Any, ...] = allowed,
                            needs: str = needs) -> None:
                t = args[at]
                if t is not None and t.dtype not in allowed:
                    raise refuse(name, str(t.dtype), needs)

            checks.append(dtype_check)
        if spec.device is not None:
            try:
                device = torch.device(spec.device)
            except (RuntimeError, TypeError):
                raise fail(name, f"device must be a device type ('cuda', 'cpu') or a device; got {spec.device!r}") from None
            exact = device.index is not None

            def device_check(args: Sequence[Any], at: int = at, name: str = name, device: Any = device,
                             exact: bool = exact) -> None:
                t = args[at]
                if t is not None and (t.device != device if exact else t.device.type != device.type):
                    raise refuse(name, f"on {t.device}", f"a tensor on {device}")

            checks.append(device_check)
        if spec.like is not None:
            if spec.like not in tensors or spec.like == name:
                raise fail(name, f"like={spec.like!r} is not another tensor input of the op "
                                 f"(its tensor inputs: {', '.join(tensors)})")
            other = inputs.index(spec.like)

            def like_check(args: Sequence[Any], at: int = at, name: str = name, other: int = other,
                           like: str = spec.like) -> None:
                t, o = args[at], args[other]
                if t is None or o is None:
                    return
                if t.dtype != o.dtype:
                    raise refuse(name, str(t.dtype), f"{o.dtype}, the dtype of input {like!r}")
                if t.device != o.device:
                    raise refuse(name, f"on {t.device}", f"a tensor on {o.device}, the device of input {like!r}")

            checks.append(like_check)
        if spec.ndim is not None:
            if not isinstance(spec.ndim, int) or isinstance(spec.ndim, bool) or spec.ndim < 0:
                raise fail(name, f"ndim must be a non-negative int; got {spec.ndim!r}")

            def ndim_check(args: Sequence[Any], at: int = at, name: str = name, ndim: int = spec.ndim) -> None:
                t = args[at]
                if t is not None and t.dim() != ndim:
                    raise refuse(name, f"a tensor of {t.dim()} dimensions (shape {tuple(t.shape)})",
                                 f"{ndim} dimensions")

            checks.append(ndim_check)
    return checks


class _Saved:
    """What the default ``setup_context`` keeps, given to ``backward`` as ``ctx.inputs``/``ctx.outputs``."""


class Op:
    """An oxide function as a PyTorch operator: call it like the function without its outputs;
    ``.op`` is the ``torch.ops`` overload (``torch.ops.<ns>.<name>.default``)."""

    def __init__(self, qualname: str, fn: Callable[..., Any], outputs: Mapping[str, Out], mutates: Sequence[str],
                 backward: Callable[..., Any] | None, setup_context: Callable[..., Any] | None,
                 tags: Sequence[Any], declared_inputs: Mapping[str, In] | None = None,
                 check: Callable[..., Any] | None = None, temporaries: Mapping[str, Temp] | None = None) -> None:
        torch = _torch()
        where = _where(fn)
        if qualname.count("::") != 1 or not all(part.isidentifier() for part in qualname.split("::")):
            raise OpDeclarationError(f"{where}: the op's name must be 'namespace::name'; got {qualname!r}")
        namespace, name = qualname.split("::")
        try:
            hints = typing.get_type_hints(fn)
        except Exception as e:  # a hint naming something the function's module does not define
            raise OpDeclarationError(f"{where}: cannot read the type hints of {fn.__qualname__}: {e}") from None
        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params]
        for p in params:
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise OpDeclarationError(f"{where}: parameter {p.name!r}: an op takes plain parameters (no *args, "
                                         "**kwargs or keyword-only ones)")
        for o, out in outputs.items():
            if out.returned and o in names:
                raise OpDeclarationError(f"{where}: output {o!r} is returned=True: {fn.__qualname__} makes and returns "
                                         "it, so it is not a parameter of the function (remove the parameter)")
            if not out.returned and o not in names:
                raise OpDeclarationError(f"{where}: output {o!r} is not a parameter of {fn.__qualname__} "
                                         f"(its parameters: {', '.join(names)}; an output the function makes "
                                         "itself and returns is declared Out(..., returned=True))")
        temporaries = dict(temporaries or {})
        for t, temp in temporaries.items():
            if not isinstance(temp, Temp):
                raise OpDeclarationError(f"{where}: temporaries[{t!r}]: expected an oxide.torch.Temp; got {temp!r}")
            if t in outputs:
                raise OpDeclarationError(f"{where}: {t!r} is both an output and a temporary")
            if t not in names:
                raise OpDeclarationError(f"{where}: temporary {t!r} is not a parameter of {fn.__qualname__} "
                                         f"(its parameters: {', '.join(names)})")
        inputs = [p for p in params if p.name not in outputs and p.name not in temporaries]
        for m in mutates:
            if m not in [p.name for p in inputs]:
                raise OpDeclarationError(f"{where}: mutates names {m!r}, which is not an input of the op")
        missing = [p.name for p in inputs if p.name not in hints]
        if missing:
            raise OpDeclarationError(f"{where}: the op's inputs need type hints (the schema is made from them); "
                                     f"none on {', '.join(missing)}")
        input_names = [p.name for p in inputs]
        tensors = [p.name for p in inputs if _is_tensor_hint(torch, hints[p.name])]
        self._allocators = [_Allocator(o, out, input_names, tensors, where) for o, out in outputs.items()]
        self._temporaries = [(_Allocator(t, Out(like=temp.like, shape=temp.shape, dtype=temp.dtype), input_names,
                                         tensors, where, "temporary"), bool(temp.zeroed)) for t, temp in temporaries.items()]
        self._temporary_names = list(temporaries)
        self._input_names = input_names
        self._inputs_lead = names[:len(input_names)] == input_names  # inputs first: passed by position
        self._checks = _input_checks(torch, qualname, declared_inputs or {}, input_names, tensors, where)
        if check is not None:
            if not callable(check):
                raise OpDeclarationError(f"{where}: check= must be a function of the op's inputs; got {check!r}")
            self._checks.append(_Allocator._from_inputs(
                check, input_names, lambda what: OpDeclarationError(f"{where}: check=: {what}"), "check"))
        # the outputs the op allocates and passes, and those the function returns
        passed = [o for o, out in outputs.items() if not out.returned]
        self._passed_names = passed
        self._returned = [a for a in self._allocators if a.returned]
        self._passed_allocators = [a for a in self._allocators if not a.returned]
        self._returns_one = len(self._returned) == 1
        # where each output of the op comes from: ("passed" or "returned", index there)
        self._gather = [(a.returned, (self._returned if a.returned else self._passed_allocators).index(a))
                        for a in self._allocators]
        self._all_passed = not self._returned
        # passed outputs after every input, in declaration order: passed by position (cheaper)
        allocated = passed + self._temporary_names  # outputs then temporaries
        self._outputs_trail = names[len(names) - len(allocated):] == allocated if allocated else True
        self._single = len(outputs) == 1
        returns: Any = (None if not outputs else torch.Tensor if self._single
                        else tuple.__class_getitem__(tuple([torch.Tensor] * len(outputs))))  # type: ignore[attr-defined]
        signature = inspect.Signature(
            [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default,
                               annotation=hints[p.name]) for p in inputs],
            return_annotation=returns,
        )

        def prototype(*args: Any) -> Any:
            raise AssertionError("a schema prototype is never called")

        prototype.__signature__ = signature  # type: ignore[attr-defined]
        try:
            schema = torch.library.infer_schema(prototype, mutates_args=tuple(mutates))
        except ValueError as e:
            raise OpDeclarationError(f"{where}: no PyTorch schema for {fn.__qualname__}: {e}") from None
        self.fn = fn
        self.qualname = qualname
        self.schema = schema
        self._lib = torch.library.Library(namespace, "FRAGMENT")
        self._lib.define(name + schema, tags=tuple(tags))
        self._lib.impl(name, self._run, "CompositeExplicitAutograd")
        torch.library.register_fake(qualname, self._fake, lib=self._lib)
        self.has_backward = backward is not None
        # outputs declared differentiable=False: marked in setup_context, as ctx.mark_non_differentiable
        non_differentiable = tuple(i for i, a in enumerate(self._allocators) if not a.differentiable)
        if non_differentiable and backward is None and len(non_differentiable) != len(self._allocators):
            raise OpDeclarationError(
                f"{where}: outputs {', '.join(repr(self._allocators[i].name) for i in non_differentiable)} are "
                "differentiable=False but the op has no backward= for the others (give backward=, or declare "
                "every output differentiable=False)")
        # the autograd node of an eager call made here, as the dispatcher's autograd kernel makes it
        self._function: Any = None
        if backward is None and non_differentiable:  # no output has a gradient: a node that marks them all
            if setup_context is not None:
                raise OpDeclarationError(f"{where}: setup_context= needs backward=")
            setup_context = _save_nothing
            backward = functools.partial(_no_gradients, n_inputs=len(inputs))
        if backward is not None:
            if setup_context is None:
                setup_context = functools.partial(_save_all, n_inputs=len(inputs))
                backward = functools.partial(_backward_with_saved, backward)
            if non_differentiable:
                setup_context = functools.partial(_mark_non_differentiable, setup_context, at=non_differentiable,
                                                  single=self._single)
            torch.library.register_autograd(qualname, backward, setup_context=setup_context, lib=self._lib)
            self._function = _autograd_function(torch, self, qualname, setup_context, backward, len(inputs))
        elif setup_context is not None:
            raise OpDeclarationError(f"{where}: setup_context= needs backward=")
        self.op = getattr(getattr(torch.ops, namespace), name).default
        self._n_inputs = len(inputs)
        self._kernels: dict[str, Callable[..., Any]] = {}  # device type -> its body (register_kernel)
        self._extras = bool(self._checks or self._temporaries)  # register_kernel sets it too
        self._tensor_positions = [i for i, p in enumerate(inputs) if p.name in tensors]
        self._torch = torch
        self._plain_types = (torch.Tensor, torch.nn.Parameter)
        self._is_compiling = torch.compiler.is_compiling
        self._dispatch_modes = torch._C._len_torch_dispatch_stack
        self._function_modes = torch._C._is_torch_function_mode_enabled
        self._grad_enabled = torch.is_grad_enabled
        functorch = getattr(torch._C, "_functorch", None)
        self._functorch_level = getattr(functorch, "maybe_current_level", lambda: None)
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<oxide.torch op {self.qualname}{self.schema}>"

    def register_kernel(self, device_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declares the decorated function the op's body for tensors on ``device_type`` (``"cpu"``,
        ``"cuda"``), registered for that device's dispatch key (as ``torch.library``'s
        ``register_kernel``); the declared function stays the body for every other device. It
        takes the same parameters (the inputs, outputs and temporaries, by the same names, in
        the same order) and gets the same allocations, checks and autograd. Returns the function."""
        torch = self._torch

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            where = _where(fn)
            try:
                key = torch._C._dispatch_key_for_device(device_type)
            except (RuntimeError, TypeError, ValueError):
                key = None
            if not isinstance(device_type, str) or key is None or ":" in device_type:
                raise OpDeclarationError(f"{where}: register_kernel takes a device type ('cpu', 'cuda'); "
                                         f"got {device_type!r}")
            if device_type in self._kernels:
                raise OpDeclarationError(f"{where}: {self.qualname} already has a {device_type} body "
                                         f"({self._kernels[device_type].__qualname__})")
            expected = list(inspect.signature(self.fn).parameters)
            got = list(inspect.signature(fn).parameters)
            if got != expected:
                raise OpDeclarationError(f"{where}: the {device_type} body of {self.qualname} takes ({', '.join(got)}); "
                                         f"it must take the parameters of {self.fn.__qualname__}: ({', '.join(expected)})")
            self._kernels[device_type] = fn
            self._extras = True
            self._lib.impl(self.qualname.split("::")[1], self._run, key)
            return fn

        return register

    def _body_for(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        """The body for these inputs' device, as the dispatcher picks the kernel: any device but
        the CPU wins over the CPU (a CUDA tensor among CPU ones runs the CUDA body)."""
        device_type = "cpu"
        for i in self._tensor_positions:
            t = args[i]
            if t is not None and t.device.type != "cpu":
                device_type = t.device.type
                break
        return self._kernels.get(device_type, self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Only where the dispatcher would run nothing but :meth:`_run` for these args is it called
        # here directly: plain tensors (or Parameters), no autograd to record, no torch.compile
        # trace (checked first: tracing must not reach the C calls below), dispatch or function
        # mode, functorch transform. Where a tensor requires grad (grad mode on) and the op has a
        # backward, the call gets the autograd node the dispatcher's autograd kernel would make
        # (the same autograd.Function). One frame, no helper calls: each costs ~0.1 µs on the
        # H200 host, and this runs on every call.
        if (kwargs or self._is_compiling() or len(args) != self._n_inputs or self._dispatch_modes()
                or self._function_modes() or self._functorch_level() is not None):
            return self.op(*args, **kwargs)
        plain = self._plain_types
        autograd = False
        for i in self._tensor_positions:
            t = args[i]
            if t is None:
                continue
            if type(t) not in plain:
                return self.op(*args)
            if t.requires_grad:
                autograd = True
        if autograd and self._grad_enabled():
            if self._function is None:
                return self.op(*args)
            return self._function.apply(*args)
        return self._call(args)

    def _run(self, *args: Any) -> Any:
        """The real kernel (the dispatcher's): allocate the outputs, run the function, return the outputs."""
        return self._call(args)

    def _allocate(self, args: tuple[Any, ...]) -> list[Any]:
        """The outputs the op passes to the function. ``empty_like`` keeps a contiguous input's
        strides, so a plain output of a contiguous input needs no ``memory_format`` keyword
        (0.4 µs each on the H200 host); an input's contiguity is asked once for all the plain
        outputs like it in a row (the LLTM forward has five)."""
        torch = self._torch
        outs = []
        last, contiguous = -1, False
        for a in self._passed_allocators:
            if a.preserve:
                outs.append(torch.empty_like(args[a.like]) if a.plain
                            else torch.empty_like(args[a.like], dtype=a.dtype_of(args)))
            elif a.plain:
                like = args[a.like]
                if a.like != last:
                    last, contiguous = a.like, like.is_contiguous()
                outs.append(torch.empty_like(like) if contiguous
                            else torch.empty_like(like, memory_format=torch.contiguous_format))
            else:
                outs.append(a.allocate_real(torch, args))
        return outs

    def _call(self, args: tuple[Any, ...]) -> Any:
        if self._extras:  # input checks, temporaries or per-device bodies: one test for all three
            return self._call_declared(args)
        outs = self._allocate(args)
        if self._outputs_trail:
            made = self.fn(*args, *outs)
        elif self._inputs_lead:  # the outputs after the inputs, in another order: by name
            made = self.fn(*args, **dict(zip(self._passed_names, outs)))
        else:  # outputs among the inputs: everything by name
            made = self.fn(**dict(zip(self._input_names, args)), **dict(zip(self._passed_names, outs)))
        if self._all_passed:
            if not outs:
                return None
            return outs[0] if self._single else tuple(outs)
        return self._with_returned(args, outs, made)

    def _call_declared(self, args: tuple[Any, ...]) -> Any:
        """:meth:`_call` for an op with input checks, temporaries or per-device bodies."""
        for c in self._checks:
            c(args)
        outs = self._allocate(args)
        fn = self._body_for(args) if self._kernels else self.fn
        temps = [a.new_zeros(self._torch, args) if zeroed else a.allocate_real(self._torch, args)
                 for a, zeroed in self._temporaries]
        if self._outputs_trail:
            made = fn(*args, *outs, *temps)
        else:
            named = dict(zip(self._passed_names, outs), **dict(zip(self._temporary_names, temps)))
            made = fn(*args, **named) if self._inputs_lead else fn(**dict(zip(self._input_names, args)), **named)
        if self._all_passed:
            if not outs:
                return None
            return outs[0] if self._single else tuple(outs)
        return self._with_returned(args, outs, made)

    def _with_returned(self, args: tuple[Any, ...], outs: list[Any], made: Any) -> Any:
        """The op's outputs where the function returned some (``returned=True``): each checked
        against its declaration, all in declaration order."""
        returned = [made] if self._returns_one else list(made) if isinstance(made, (tuple, list)) else None
        if returned is None or len(returned) != len(self._returned):
            raise TypeError(f"{self.qualname}: {self.fn.__qualname__} returned {type(made).__name__}; it must "
                            f"return its returned=True outputs ({', '.join(a.name for a in self._returned)}) "
                            f"{'as a tensor' if self._returns_one else 'as a tuple, in declaration order'}")
        for k, a in enumerate(self._returned):
            returned[k] = a.check_returned(self._torch, args, self._tensor_positions, returned[k],
                                           outs + returned[:k] + returned[k + 1:])
        outs = [returned[i] if from_fn else outs[i] for from_fn, i in self._gather]
        return outs[0] if self._single else tuple(outs)

    def _fake(self, *args: Any) -> Any:
        torch = self._torch
        for c in self._checks:
            c(args)
        outs = [a.allocate(torch, args) for a in self._allocators]
        if not outs:
            return None
        return outs[0] if self._single else tuple(outs)


def _autograd_function(torch: Any, op: Op, qualname: str, setup_context: Callable[..., Any],
                       backward: Callable[..., Any], n_inputs: int) -> Any:
    """The ``torch.autograd.Function`` that ``torch.library.register_autograd`` makes the op's
    autograd kernel apply (torch/_library/autograd.py), for eager calls made without the
    dispatcher: forward runs the op (grad mode off, as below the autograd key) and
    ``setup_context``; backward calls ``backward`` and checks the count of its gradients."""

    def forward(ctx: Any, *args: Any) -> Any:
        result = op._call(args)
        setup_context(ctx=ctx, inputs=args, output=result)
        return result

    def backward_checked(ctx: Any, *grads: Any) -> Any:
        result = backward(ctx, *grads)
        actual = len(result) if isinstance(result, tuple) else 1
        if actual != n_inputs:
            raise RuntimeError(
                f"The backward formula for {qualname} returned an incorrect number of gradients "
                f"(expected {n_inputs}, got {actual}). Expected one gradient for each forward input. "
                "Use None for inputs that do not require a gradient.")
        return result

    namespace, name = qualname.split("::")
    return type(f"GeneratedBackwardFor_{namespace}_{name}_default", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward_checked)})


def _is_tensor_hint(torch: Any, hint: Any) -> bool:
    if hint is torch.Tensor:
        return True
    return bool(typing.get_origin(hint) in (typing.Union, getattr(__import__("types"), "UnionType", None))
                and torch.Tensor in typing.get_args(hint))


def _save_all(ctx: Any, inputs: tuple[Any, ...], output: Any, *, n_inputs: int) -> None:
    """The default ``setup_context``: every input and output, tensors through
    ``save_for_backward`` (so a later in-place write into one is an error at backward)."""
    outputs = () if output is None else output if isinstance(output, tuple) else (output,)
    values = list(inputs) + list(outputs)
    tensor = _torch().Tensor
    tensor_at = [i for i, v in enumerate(values) if isinstance(v, tensor)]
    ctx.save_for_backward(*(values[i] for i in tensor_at))
    # the tensors come back from saved_tensors: ctx keeping them too would be a reference cycle
    # (an output's grad_fn is this node), which held every step's outputs until a GC pass
    for i in tensor_at:
        values[i] = None
    ctx._oxide_layout = (values, tensor_at, n_inputs)


def _mark_non_differentiable(setup_context: Callable[..., Any], ctx: Any, inputs: tuple[Any, ...], output: Any, *,
                             at: tuple[int, ...], single: bool) -> None:
    """``setup_context``, then ``ctx.mark_non_differentiable`` of the outputs declared
    ``Out(differentiable=False)`` (their positions ``at`` among the op's outputs)."""
    setup_context(ctx=ctx, inputs=inputs, output=output)
    outputs = (output,) if single else output
    ctx.mark_non_differentiable(*(outputs[i] for i in at))


def _save_nothing(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    """The ``setup_context`` of an op none of whose outputs is differentiable."""


def _no_gradients(ctx: Any, *grads: Any, n_inputs: int) -> Any:
    """The backward of an op none of whose outputs is differentiable: never reached by autograd
    (nothing requires grad through it), a None for each input if it is called anyway."""
    return None if n_inputs == 1 else (None,) * n_inputs


def _backward_with_saved(backward: Callable[..., Any], ctx: Any, *grads: Any) -> Any:
    values, tensor_at, n_inputs = ctx._oxide_layout
    values = list(values)
    for i, t in zip(tensor_at, ctx.saved_tensors):
        values[i] = t
    ctx.inputs, ctx.outputs = tuple(values[:n_inputs]), tuple(values[n_inputs:])
    try:
        return backward(ctx, *grads)
    finally:
        del ctx.inputs, ctx.outputs  # as above: no cycle through the node once backward is done


def op(qualname: str, *, inputs: Mapping[str, In] | None = None, outputs: Mapping[str, Out] | None = None,
       temporaries: Mapping[str, Temp] | None = None, mutates: Sequence[str] = (),
       check: Callable[..., Any] | None = None,
       backward: Callable[..., Any] | None = None, setup_context: Callable[..., Any] | None = None,
       tags: Sequence[Any] = ()) -> Callable[[Callable[..., Any]], Op]:
    """Declares the decorated function as the PyTorch operator ``qualname`` ("ns::name").

    ``inputs``: tensor input name -> :class:`In`, what the op accepts (dtype, device, ``like``
    another input, ndim); ``check``: a function of inputs (its parameter names pick them) that
    raises on inputs the op refuses (shapes that do not fit). Both run in the real kernel and
    the fake one, before anything is allocated.
    ``outputs``: parameter name -> :class:`Out`, allocated and passed by the op, and returned
    (one tensor, or a tuple in declaration order; nothing when there are none). ``temporaries``:
    parameter name -> :class:`Temp`, allocated and passed, not returned. ``mutates``:
    inputs the function writes in place. ``backward(ctx, *grads)``: the gradients of the
    inputs (None where there is none), as for ``torch.library.register_autograd``; with no
    ``setup_context`` it finds ``ctx.inputs`` and ``ctx.outputs``. ``tags``: ``torch.Tag``s.
    """

    def declare(fn: Callable[..., Any]) -> Op:
        return Op(qualname, fn, dict(outputs or {}), tuple(mutates), backward, setup_context, tags,
                  dict(inputs or {}), check, dict(temporaries or {}))

    return declare
