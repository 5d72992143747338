"""``Kernel``: the launchable handle ``@oxide.kernel`` returns.

Constructing one does nothing but remember the function, so importing a module of kernels
costs no CUDA work and no file I/O. The first launch finds the module's manifest (CPU only),
checks and converts the arguments, then initializes CUDA and loads the code for the device.

Two launch paths: ``LaunchConfig`` derives from the compiled launcher's ``LaunchBase``
(:mod:`oxide.runtime.launcher`), whose C call handles the common launches; anything else, and
every launch before the kernel's plan is known, goes through :meth:`Kernel._launch` here, which
also teaches the C side what it learned (the C plan is built here, ``_configure_plan`` and
``_teach``). Without the extension (or with ``OXIDE_PURE_PYTHON=1``) every launch takes the
Python path.

Beside this module: ``dispatch.py`` (the table read from the manifest: ``Dispatch``,
``Specialization``), ``arguments.py`` (the checks that name a parameter, and the slot values),
``streams.py`` (a framework's current stream) and ``stream_order.py`` (the streams a launch
waits for).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence

from oxide import _CollectorPaused
from oxide.abi.vectors import vector_lanes
from oxide.runtime import device_choice, launcher
from oxide.runtime.launch import (
    MAX_BLOCK_THREADS,
    MAX_PORTABLE_CLUSTER_BLOCKS,
    ArgPacker,
    cluster_dims,
    grid_for,
    grid_for_2d,
    normalize_dims,
    scalar_converter,
)
from oxide.runtime.dispatch import CONSTEXPR, Dispatch, Specialization
from oxide.runtime.streams import current_stream, framework_of, stream_handle

if TYPE_CHECKING:
    from oxide.runtime import arguments, artifacts, device, dynamic_shared, kernel_errors, loader
    from oxide.runtime.arrays import ArrayView
    from oxide.runtime.device_array import DeviceArray
    from oxide.runtime.stream_order import producer_streams, same_stream

__all__ = ["Kernel", "LaunchConfig", "Specialization"]

_CONFIG_CACHE_SIZE = 64
# (manifest path, context id) -> the stream of the last launch there of a kernel that calls grid.sync()
_GRID_BARRIER_STREAMS: dict[tuple[str, int], int] = {}
_imported = False


def _import_launch_modules() -> None:
    """Imports what a launch needs (the manifest reader, the loader, the array readers, ctypes)
    into this module's namespace, on the first launch: importing a module of kernels must stay
    cheap, and these are milliseconds."""
    global _imported, arguments, artifacts, device, dynamic_shared, kernel_errors, loader, DeviceArray
    global producer_streams, same_stream
    from oxide.runtime import arguments, artifacts, device, dynamic_shared, kernel_errors, loader
    from oxide.runtime.device_array import DeviceArray
    from oxide.runtime.stream_order import producer_streams, same_stream

    _imported = True


class LaunchConfig(launcher.LaunchBase):  # type: ignore[misc]
    """``kernel[grid, block, stream, shared_mem]``: call it with the kernel's arguments.

    Calling it runs the compiled launcher (the C base class) when there is one; it falls back
    to :meth:`_launch_slow` for anything it does not handle. A cluster or cooperative launch
    (``Kernel.launch``) always takes the Python path, through ``cuLaunchKernelEx``.
    """

    __slots__ = ("kernel", "grid", "block", "stream", "shared_mem", "cluster", "cooperative")

    def __init__(
        self,
        kernel: Kernel,
        grid: Any,
        block: Any,
        stream: Any = None,
        shared_mem: int = 0,
        cluster: Any = None,
        cooperative: bool = False,
    ) -> None:
        self.kernel = kernel
        if type(grid) is int and type(block) is int and 0 <= grid <= 0x7FFFFFFF and 0 < block <= MAX_BLOCK_THREADS:
            self.grid, self.block = (grid, 1, 1), (block, 1, 1)  # k[n_blocks, threads]: what normalize_dims gives
        else:
            self.grid, self.block = normalize_dims(grid, block, kernel.name)
        # None: the current stream of the arguments' framework, read at each launch (streams.py)
        self.stream: int | None = (None if stream is None else
                                   stream_handle(stream, f"the stream of {kernel.name}[grid, block, stream]"))
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise ValueError(f"shared_mem must be a non-negative int of bytes; got {shared_mem!r}")
        self.shared_mem = shared_mem
        self.cluster = None if cluster is None else cluster_dims(cluster, self.grid)
        if not isinstance(cooperative, bool):
            raise TypeError(f"cooperative must be True or False; got {cooperative!r}")
        self.cooperative = cooperative
        if launcher.ENABLED:
            if (self.stream or 0) > 0xFFFFFFFFFFFFFFFF or shared_mem > 0xFFFFFFFF:
                raise ValueError(f"stream handle {self.stream:#x} or shared_mem {shared_mem} out of range")
            plain = self.cluster is None and not cooperative
            self._bind(kernel._plan if plain else None, self.grid, self.block, self.stream or 0, shared_mem,
                       self.stream is None)

    def _launch_slow(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(self.kernel._keywords_error(kwargs))
        self.kernel._launch(args, self.grid, self.block, self.stream, self.shared_mem, self.cluster, self.cooperative)

    def _launch_failed(self, err: int) -> None:
        from oxide.runtime import device

        device.raise_cuda_error(err, f"launching kernel {self.kernel.name} (grid {self.grid}, block {self.block})")

    if not launcher.ENABLED:
        __call__ = _launch_slow

    def __repr__(self) -> str:
        stream = "the framework's current" if self.stream is None else f"{self.stream:#x}"
        return f"<launch of {self.kernel.name} grid={self.grid} block={self.block} stream={stream}>"


class Kernel(launcher.KernelBase):  # type: ignore[misc]
    """A GPU kernel. Launch with ``k[grid, block](*args)`` or ``k.launch(*args, grid=, block=)``.

    ``k[grid, block]`` is looked up in a cache of launch configurations by the base class (in C
    when the launcher is built); a miss calls :meth:`_make_config`.
    """

    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.func = func
        self.options = options
        self.name: str = func.__name__
        functools.update_wrapper(self, func)  # type: ignore[arg-type]
        self._dispatch: Dispatch | None = None
        self._configs: dict[Any, LaunchConfig] = {}  # subscript key -> config; KernelBase reads it
        self._plan: Any = launcher.new_plan()  # the C launcher's view of this kernel; None without it
        self._planned = False  # whether the C plan could take this kernel's parameters

    def __repr__(self) -> str:
        return f"<oxide kernel {self.func.__module__}.{self.func.__qualname__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"kernel {self.name} runs on the GPU: launch it with {self.name}[grid, block](...) "
            f"or {self.name}.launch(..., grid=..., block=...)"
        )

    # launching --------------------------------------------------------------------------

    def _make_config(self, config: Any) -> LaunchConfig:
        """``k[config]`` when ``config`` is not in the cache (the lookup is the base class's)."""
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise TypeError(
                f"launch {self.name} with {self.name}[grid, block], {self.name}[grid, block, stream] "
                f"or {self.name}[grid, block, stream, shared_mem_bytes]; got {self.name}[{config!r}]"
            )
        launch = LaunchConfig(self, *config)
        try:
            if len(self._configs) >= _CONFIG_CACHE_SIZE:
                self._configs.clear()
            self._configs[config] = launch
        except TypeError:
            pass
        return launch

    def launch(
        self,
        *args: Any,
        grid: Any,
        block: Any,
        stream: Any = None,
        shared_mem: int = 0,
        cluster: Any = None,
        cooperative: bool = False,
        **kwargs: Any,
    ) -> None:
        """Launches on ``grid`` blocks of ``block`` threads (ints or tuples of up to 3 ints).

        ``cluster``: blocks per thread block cluster (an int or a tuple; compute capability 9.0
        and newer), which must tile the grid; the blocks of a cluster run at once on one GPC.
        ``cooperative``: all blocks are resident at once (the grid must fit the device: see
        the error's figures), as ``cudaLaunchCooperativeKernel``.
        """
        if kwargs:
            raise TypeError(self._keywords_error(kwargs))
        if cluster is None and cooperative is False:
            self[grid, block, stream, shared_mem](*args)  # the cached configuration, the C path
        else:
            LaunchConfig(self, grid, block, stream, shared_mem, cluster, cooperative)(*args)

    def _keywords_error(self, kwargs: dict[str, Any]) -> str:
        """Why a launch with keyword arguments is refused: the kernel's parameters, in order."""
        code = self.func.__code__
        params = ", ".join(code.co_varnames[: code.co_argcount])
        plural = "s" if len(kwargs) > 1 else ""
        return (f"kernel {self.name} takes its arguments by position ({params}); got keyword argument{plural} "
                f"{', '.join(repr(k) for k in kwargs)}: pass them in order, {self.name}[grid, block](...)")

    @staticmethod
    def grid_for(n: int, block: int = 256) -> int:
        """The 1-D grid size that covers ``n`` elements with ``block`` threads per block."""
        return grid_for(n, block)

    @staticmethod
    def grid_for_2d(rows: int, cols: int, block: tuple[int, int] = (32, 8)) -> tuple[int, int]:
        """The 2-D grid that covers ``rows`` x ``cols`` with ``block`` = (x, y) threads, x along
        the columns: ``k[k.grid_for_2d(rows, cols, (32, 8)), (32, 8)](...)``."""
        return grid_for_2d(rows, cols, block)

    def _launch(
        self,
        args: Sequence[Any],
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        stream: int | None,
        shared_mem: int,
        cluster: tuple[int, int, int] | None = None,
        cooperative: bool = False,
    ) -> None:
        """``stream`` None: the current stream of the arguments' framework, on its device
        (:func:`oxide.runtime.streams.framework_of`)."""
        if self._dispatch is None:  # the first launch: modules, the manifest, the table (cold start)
            with _CollectorPaused():
                if not _imported:
                    _import_launch_modules()
                kernel_errors.check_kernel_errors()  # a failure of an earlier kernel is raised first
                variant, values, keep = self._prepare(args)
        else:
            kernel_errors.check_kernel_errors()
            variant, values, keep = self._prepare(args)
        cooperative = cooperative or variant.spec.cooperative  # it reaches grid.sync()
        if grid[0] == 0 or grid[1] == 0 or grid[2] == 0:
            return  # an empty grid (grid_for(0)) is a launch of nothing, not an error
        if variant.spec.preconditions:
            self._check_preconditions(variant, values, grid, block)
        if variant.fast is not None:
            from . import preconditions

            if preconditions.evaluate(variant.fast_condition, values, grid, block):
                variant = variant.fast  # no check of it can fail (passes/launch_instances.py)
        drv = device.driver()
        handle, uid = device.current()  # a reset context is made again (device._revive)
        if stream is None:
            framework = framework_of(view.owner for view in keep)
            if framework is None:
                stream = 0
            else:
                kind, ordinal = framework
                if device.device_count() > 1 and device.context_device(handle).ordinal != ordinal:
                    # under the arrays' device, as the framework's own operations run
                    with device.primary_context(ordinal):
                        self._launch_in_context(args, variant, values, keep, grid, block,
                                                current_stream(kind, ordinal), shared_mem, cluster, cooperative)
                    return
                stream = current_stream(kind, ordinal)
        self._launch_in_context(args, variant, values, keep, grid, block, stream, shared_mem, cluster, cooperative,
                                drv, handle, uid)

    def _launch_in_context(
        self, args: Sequence[Any], variant: Specialization, values: list[Any], keep: list[Any],
        grid: tuple[int, int, int], block: tuple[int, int, int], stream: int, shared_mem: int,
        cluster: tuple[int, int, int] | None, cooperative: bool, drv: Any = None, handle: int = 0, uid: int = 0,
    ) -> None:
        """The launch of :meth:`_launch` in the current context (``handle``/``uid``, read again
        when not given), on ``stream``."""
        if drv is None:
            drv = device.driver()
            handle, uid = device.current()
        fn = variant.functions.get(uid)
        if fn is None:
            with _CollectorPaused():  # the code's first load in this context
                fn, handle, uid = self._load(variant)
        several_gpus = device.device_count() > 1
        if several_gpus and len(keep):
            assert self._dispatch is not None
            arguments.check_devices(self._dispatch, self.name, keep, handle)
        if shared_mem > variant.shared_limits.get(uid, 0):  # what the function takes: known after one launch
            dynamic_shared.allow(drv, fn, variant, handle, uid, shared_mem, self.name)
        for producer in producer_streams(keep, stream):
            device.stream_wait(stream, producer, uid)
        special = cluster is not None or cooperative
        if special:
            self._check_special_launch(fn, handle, grid, block, shared_mem, cluster, cooperative)
        if variant.spec.cooperative:
            self._order_grid_barrier(uid, stream)
        packer = variant.packer
        holds_device_array = False
        for view in keep:
            if type(view.owner) is DeviceArray:
                holds_device_array = True
                break
        if holds_device_array:
            # DeviceArray.free() in another thread takes this lock too: it either freed an array
            # before (refused here, as its pointer is gone) or waits until this launch is queued
            # and noted on the array (_after_launch), so its free is ordered after the launch
            with DeviceArray._uses_lock:
                self._refuse_freed(keep)
                err = self._queue(drv, fn, packer, values, grid, block, stream, shared_mem, special, cluster,
                                  cooperative)
                if err == 0:
                    self._after_launch(keep, stream)
        else:
            err = self._queue(drv, fn, packer, values, grid, block, stream, shared_mem, special, cluster, cooperative)
            if err == 0:
                self._after_launch(keep, stream)
        if err != 0:
            device.raise_cuda_error(err, f"launching kernel {self.name} (grid {grid}, block {block})")
        if self._dispatch is not None and self._dispatch.on_cpu:
            # the CPU device ran the kernel to completion: a check it failed is raised by this launch
            kernel_errors.check_kernel_errors()
            return
        if self._plan is not None and self._planned and not special:
            self._teach(variant, handle, uid, fn, keep, drv, args)
        del keep  # the argument arrays stay alive until the driver has taken the launch

    def _queue(self, drv: Any, fn: Any, packer: ArgPacker, values: list[Any], grid: tuple[int, int, int],
               block: tuple[int, int, int], stream: int, shared_mem: int, special: bool,
               cluster: tuple[int, int, int] | None, cooperative: bool) -> Any:
        """Packs the slot values and hands the launch to the driver; its CUresult."""
        with packer.lock:
            params = packer.pack(values)
            if special:
                return self._launch_ex(drv, fn, grid, block, stream, shared_mem, params, cluster, cooperative)
            (err,) = drv.cuLaunchKernel(
                fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_mem, stream, params, 0
            )
            return err

    def _refuse_freed(self, views: list[Any]) -> None:
        """A DeviceArray that another thread freed after its pointer was read for this launch:
        refused, naming the parameter (its memory may already belong to someone else)."""
        d = self._dispatch
        assert d is not None
        for view, i in zip(views, d.view_index):
            if type(view.owner) is DeviceArray and view.owner._freed:
                raise TypeError(f"parameter {d.names[i]!r} of {self.name} is a DeviceArray that was freed "
                                "(DeviceArray.free()) while the launch was being prepared: its memory is gone")

    def _order_grid_barrier(self, uid: int, stream: int) -> None:
        """A module's kernels that call grid.sync() share one barrier counter per context
        (``oxide_build/intrinsics/thread.py``): a launch of one on another stream than the
        previous such launch in this context waits for it, so no two run at once."""
        assert self._dispatch is not None
        key = (str(self._dispatch.located.path), uid)
        last = _GRID_BARRIER_STREAMS.get(key)
        if last is not None and last != stream:
            device.stream_wait(stream, last)
        _GRID_BARRIER_STREAMS[key] = stream

    def _check_special_launch(self, fn: Any, ctx: int, grid: tuple[int, int, int], block: tuple[int, int, int],
                              shared_mem: int, cluster: tuple[int, int, int] | None, cooperative: bool) -> None:
        """What the device must offer a cluster or cooperative launch, said before launching."""
        info = device.context_device(ctx)
        if cluster is not None and info.major < 9:
            raise ValueError(
                f"thread block clusters need a GPU of compute capability 9.0 or newer; {info.name} "
                f"(cuda:{info.ordinal}) is {info.arch}: launch {self.name} without cluster="
            )
        if cooperative:
            drv = device.driver()
            threads = block[0] * block[1] * block[2]
            err, per_sm = drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, shared_mem)
            device.check(err, f"cuOccupancyMaxActiveBlocksPerMultiprocessor of kernel {self.name}")
            err, dev = drv.cuDeviceGet(info.ordinal)
            device.check(err, "cuDeviceGet")
            err, sms = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
            device.check(err, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)")
            limit, blocks = int(per_sm) * int(sms), grid[0] * grid[1] * grid[2]
            if blocks > limit:
                raise ValueError(
                    f"a cooperative launch of {self.name} needs all its blocks resident at once: at most "
                    f"{limit} blocks of {threads} threads ({int(per_sm)} per multiprocessor x {int(sms)}) on "
                    f"{info.name}; got grid {grid} = {blocks} blocks"
                )

    def _launch_ex(self, drv: Any, fn: Any, grid: tuple[int, int, int], block: tuple[int, int, int], stream: int,
                   shared_mem: int, params: int, cluster: tuple[int, int, int] | None, cooperative: bool) -> Any:
        """``cuLaunchKernelEx`` with the cluster dimension and cooperative attributes."""
        config = drv.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = shared_mem
        config.hStream = stream
        attrs = []
        ids = drv.CUlaunchAttributeID
        if cluster is not None:
            if cluster[0] * cluster[1] * cluster[2] > MAX_PORTABLE_CLUSTER_BLOCKS:
                (err,) = drv.cuFuncSetAttribute(
                    fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                device.check(err, f"allowing kernel {self.name} a cluster of more than 8 blocks")
            attr = drv.CUlaunchAttribute()
            attr.id = ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
            attrs.append(attr)
        if cooperative:
            attr = drv.CUlaunchAttribute()
            attr.id = ids.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            attr.value.cooperative = 1
            attrs.append(attr)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        (err,) = drv.cuLaunchKernelEx(config, fn, params, 0)
        return err

    def _check_preconditions(self, variant: Specialization, values: list[Any], grid: tuple[int, int, int],
                             block: tuple[int, int, int]) -> None:
        """The kernel's launch-time asserts (preconditions.py): a failure is raised here, and
        the kernel is not launched."""
        from . import preconditions

        site_id = preconditions.failed(variant.spec.preconditions, values, grid, block)
        if site_id is None:
            return
        d = self._dispatch
        assert d is not None
        site = next((s for s in d.located.manifest.error_sites if s.id == site_id), None)
        if site is None:
            from oxide.errors import KernelError

            raise KernelError(f"a launch precondition of kernel {self.name} failed (site {site_id}), "
                              "but its manifest does not describe that site: rebuild the package")
        raise kernel_errors.assertion_error(site, " (checked at launch; the kernel was not launched)")

    def _after_launch(self, views: list[Any], stream: int) -> None:
        """What a queued launch changes for its arrays: a written PyTorch tensor's version
        counter goes up (autograd then knows of the write, as of an in-place operation), and a
        stream-ordered DeviceArray used on another stream than its own is not freed before
        the launch ends."""
        d = self._dispatch
        assert d is not None
        for view, writable in zip(views, d.mutable):
            owner = view.owner
            if type(owner) is DeviceArray:
                if owner._stream is not None and same_stream(owner._stream) != same_stream(stream):
                    owner._used_on(stream)
            elif writable and arguments.is_torch_tensor(owner):
                _bump_version(owner)

    def _teach(
        self, variant: Specialization, ctx: int, uid: int, fn: Any, views: list[ArrayView], drv: Any,
        args: Sequence[Any]
    ) -> None:
        """Tells the C launcher what this successful launch showed: the function in this
        context, the array and NumPy scalar types. Later launches like it take the C path."""
        if not launcher.bind_driver(drv):
            return
        shared = dynamic_shared.limit(drv, fn, variant, uid, self.name)  # C leaves launches asking more to Python
        if variant.planned.get(uid) != shared:  # ctx is current: its device is the one the launch checked
            self._plan.set_function(variant.index, ctx, int(fn), device.context_device(ctx).ordinal, uid, shared,
                                    variant.is_index32)
            variant.planned[uid] = shared
        for view in views:
            launcher.learn_array(view.owner)
        for i, conv in enumerate(variant.converters):
            if conv is not None and type(args[i]).__module__ == "numpy":
                launcher.learn_scalar(args[i])

    # arguments ----------------------------------------------------------------------------

    def _prepare(self, args: Sequence[Any]) -> tuple[Specialization, list[Any], list[ArrayView]]:
        """Checks ``args`` and converts them into slot values: all on the CPU (arguments.py)."""
        d = self._dispatch
        if d is None or d.on_cpu is not device_choice.ON_CPU:  # first launch, or on the other device
            d = self._build_dispatch()  # imports the launch modules, arguments among them
        return arguments.prepare(d, self.name, args)

    # code ---------------------------------------------------------------------------------

    def _arch(self) -> str:
        return device.context_device(device.current_context()).arch

    def _build_dispatch(self) -> Dispatch:
        if not _imported:
            _import_launch_modules()
        source, module = artifacts.kernel_source(self.func)
        located = artifacts.locate_manifest(source, module, self._arch)
        specs = located.manifest.kernels_named(self.name)
        located = artifacts.kernel_part(located, self.name)  # the code of the part holding it
        if not specs:
            from oxide.errors import CudaError

            raise CudaError(
                f"kernel {self.name} is not in the compiled module {module} ({located.path}): "
                "the package was built before the kernel was added; rebuild it"
            )
        first = specs[0].params

        def shape_of(params: Any) -> list[tuple[Any, ...]]:  # what every specialization must agree on
            return [(p.name, p.is_view, p.is_view and vector_lanes(p.dtype) is not None, p.optional) for p in params]

        first_shape = shape_of(first)
        for s in specs[1:]:
            if shape_of(s.params) != first_shape:
                from oxide.errors import CudaError

                raise CudaError(f"the specializations of kernel {self.name} in {located.path} disagree on its parameters")
        if any(p.is_aggregate for s in specs for p in s.params):
            from oxide.runtime.struct_params import FieldsConverter  # also a SEVERAL_SLOTS converter
        if any(p.is_tensor_map for s in specs for p in s.params):
            from oxide.runtime.tensor_maps import TensorMapConverter

        # the C plan's variants: the specializations, then their fast instances
        fast_index: dict[int, int] = {}
        for index, s in enumerate(specs):
            if s.fast_symbol:
                fast_index[index] = len(specs) + len(fast_index)
        variants = [
            Specialization(
                s, ArgPacker(s.params, s.param_slots),
                [CONSTEXPR if p.is_constexpr else None if p.is_view else FieldsConverter(p) if p.is_aggregate
                 else TensorMapConverter(p.dtype, p.ndim) if p.is_tensor_map
                 else scalar_converter(p.dtype) for p in s.params],
                index, fast_index=fast_index.get(index)
            )
            for index, s in enumerate(specs)
        ]
        view_index = tuple(i for i, p in enumerate(first) if p.is_view)
        vectors = tuple(first[i].dtype if vector_lanes(first[i].dtype) else "" for i in view_index)
        by_dtypes: dict[tuple[str, ...], list[Specialization]] = {}
        for var in variants:
            by_dtypes.setdefault(tuple(var.spec.params[i].dtype for i in view_index), []).append(var)
        d = Dispatch(
            located=located,
            names=tuple(p.name for p in first),
            view_index=view_index,
            mutable=tuple(first[i].is_mutable_view for i in view_index),
            variants=variants,
            by_view_dtypes=by_dtypes,
            tensor_ndim=tuple(first[i].ndim if first[i].is_tensor else 0 for i in view_index),
            constexpr_index=tuple(i for i, p in enumerate(first) if p.is_constexpr),
            tensor_map_index=tuple(i for i, p in enumerate(first) if p.is_tensor_map),
            vectors=vectors if any(vectors) else (),
            on_cpu=located.cpu is not None,
            optional=tuple(first[i].optional for i in view_index) if any(p.optional for p in first) else (),
        )
        self._planned = self._plan is not None and self._configure_plan(d)
        self._dispatch = d
        return d

    def _configure_plan(self, d: Dispatch) -> bool:
        """Gives the C launcher this kernel's parameters, specializations and launch
        preconditions (which it compiles and checks before each launch, leaving a failure to
        :meth:`_check_preconditions`); False where it cannot take them (every launch then goes
        through Python)."""
        if any(v.spec.cooperative for v in d.variants):
            return False  # grid.sync(): a cooperative launch, which only the Python path makes
        first = d.variants[0].spec.params
        layout = [(p.kind, p.ndim) for p in first]
        codes = launcher.DTYPE_CODES
        for p in first:
            if p.is_view and vector_lanes(p.dtype) is not None:
                return False  # views of vector elements: an array of the lanes, read by vector_views.py
            if p.is_tensor:
                if not 1 <= p.ndim <= launcher.MAX_NDIM:
                    return False
            elif p.is_view:
                if p.ndim != 1 or p.dtype not in codes:
                    return False  # views of records (and other element types the C path has no code for)
            elif not (p.is_scalar or p.is_constexpr):
                return False  # structs, vectors (passed as their fields) and TMA descriptors take the Python path
        constexprs: list[tuple[int, ...]] = []
        for v in d.variants:
            if [(p.kind, p.ndim) for p in v.spec.params] != layout:
                return False
            if any(p.is_scalar and p.dtype not in codes for p in v.spec.params):
                return False
            values = []
            for i in d.constexpr_index:
                text = v.spec.specialization.get(d.names[i], "")
                try:
                    value = int(text)
                except ValueError:
                    return False
                if str(value) != text:  # the Python path compares str(argument) with it
                    return False
                values.append(value)
            constexprs.append(tuple(values))
        # a variant is picked in C only when its view dtypes and Constexpr values name it alone
        keys = [(tuple(v.spec.params[i].dtype for i in d.view_index), c) for v, c in zip(d.variants, constexprs)]
        return bool(self._plan.configure(
            [p.is_view for p in first],
            [p.is_mutable_view for p in first],
            [
                (
                    [codes.get(v.spec.params[i].dtype, 0) for i in d.view_index],
                    [codes.get(p.dtype, 0) if p.is_scalar else 0 for p in v.spec.params],
                    keys.count(key) == 1,
                    list(c),
                    [pre.code for pre in v.spec.preconditions],
                    v.index32 is not None,
                    # the slots each entry point declares (KernelSpec.param_slots); None: all
                    v.packer.passed,
                    v.index32.packer.passed if v.index32 is not None else None,
                    # its fast instance's variant (-1: none; -2: this is one, never matched)
                    v.fast.index if v.fast is not None else -2 if fast else -1,
                    [v.fast_condition] if v.fast is not None else None,
                )
                for v, key, c, fast in [*((v, key, c, False) for v, key, c in zip(d.variants, keys, constexprs)),
                                        *((v.fast, key, c, True) for v, key, c in zip(d.variants, keys, constexprs)
                                          if v.fast is not None)]
            ],
            [p.ndim if p.is_tensor else 0 for p in first],
            [p.is_constexpr for p in first],
            [p.optional for p in first],
        ))

    def _load(self, variant: Specialization) -> tuple[Any, int, int]:
        """The CUfunction of ``variant`` in the current context (and that context's handle and
        uid), loading the module once per context."""
        assert self._dispatch is not None
        located = self._dispatch.located
        with loader.LOAD_LOCK:
            ctx, uid = device.current()
            fn = variant.functions.get(uid)
            if fn is not None:
                return fn, ctx, uid
            mod = loader.load_located(ctx, located)
            fn = loader.get_function(mod, variant.spec.symbol, kernel=self.name)
            variant.functions[uid] = fn
            return fn, ctx, uid

    # introspection --------------------------------------------------------------------------

    @property
    def specializations(self) -> list[dict[str, str]]:
        """The TypeVar assignments compiled for this kernel (``[{}]`` for a non-generic kernel)."""
        d = self._dispatch
        if d is None or d.on_cpu is not device_choice.ON_CPU:
            d = self._build_dispatch()
        return [dict(v.spec.specialization) for v in d.variants]

    @property
    def attributes(self) -> dict[str, int]:
        """Registers per thread, static shared, local and constant memory of the first
        specialization on the current device (``cuFuncGetAttribute``)."""
        d = self._dispatch
        if d is None or d.on_cpu is not device_choice.ON_CPU:
            d = self._build_dispatch()
        variant = d.variants[0]
        fn, _, _ = self._load(variant)
        drv = device.driver()
        a = drv.CUfunction_attribute
        out: dict[str, int] = {}
        for key, attr in (
            ("registers", a.CU_FUNC_ATTRIBUTE_NUM_REGS),
            ("shared_bytes", a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            ("local_bytes", a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            ("const_bytes", a.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES),
            ("max_threads_per_block", a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            ("ptx_version", a.CU_FUNC_ATTRIBUTE_PTX_VERSION),
            ("binary_version", a.CU_FUNC_ATTRIBUTE_BINARY_VERSION),
        ):
            err, value = drv.cuFuncGetAttribute(attr, fn)
            device.check(err, f"cuFuncGetAttribute({key}) of kernel {self.name}")
            out[key] = int(value)
        return out

    def max_block_size(self) -> int:
        """The most threads per block this kernel can launch with on the current device."""
        return self.attributes["max_threads_per_block"]


def _bump_version(t: Any) -> None:
    """``torch.autograd.graph.increment_version(t)``: a tensor saved for a backward pass and
    then written by a kernel makes that backward fail loudly ("modified by an inplace
    operation") instead of using the new values silently."""
    from oxide.runtime import launcher

    bump = launcher.torch_version_bump()
    if bump is not None:
        try:
            bump(t)
        except RuntimeError:
            pass  # an inference tensor has no version counter (older PyTorch raises for it)
