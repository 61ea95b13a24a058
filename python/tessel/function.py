"""Compiled TC functions: ``tessel.compile`` and the ``Function`` it returns.

A call binds its arguments the way a Python function binds them (by
position in declaration order, or by name), describes every tensor to the
C API as a DLTensor over the caller's own memory (no copy), allocates the
outputs the caller did not pass (same kind and device as the first tensor
argument), runs, and returns the outputs (one: the tensor; several: a tuple
in ``-> (...)`` order). Each thread calling a Function has its own C
``tsl_args``, so one Function may be called from many threads at once.
"""
from __future__ import annotations

import ctypes
import inspect
import os
import threading
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _fast
from . import _lib
from . import _tensors
from .errors import ArgumentError, Error, error_for

_L = _lib.lib
_ndarray = np.ndarray
_get_pointer = _tensors._get_pointer
_NUMPY = _tensors.NUMPY
_kDLCPU, _kDLCUDA = _tensors.kDLCPU, _tensors.kDLCUDA
_TARGETS = {"interp": 0, "cpu": 1, "cuda": 2}
_TARGET_NAMES = {v: k for k, v in _TARGETS.items()}


class _Context:
    """Owns one tsl_context (errors are kept per calling thread)."""

    def __init__(self) -> None:
        self.ptr = _L.tsl_context_create()
        if not self.ptr:
            raise MemoryError("tessel: tsl_context_create failed")

    def error(self, status: int) -> Error:
        msg = _L.tsl_context_error(self.ptr) or b""
        return error_for(_lib.STATUS_NAMES[status] if 0 <= status < len(_lib.STATUS_NAMES)
                         else "TSL_ERR_INTERNAL", msg.decode("utf-8", "replace"))

    def __del__(self, _free=_L.tsl_context_free) -> None:  # bound now: globals may be gone at exit
        if getattr(self, "ptr", None):
            _free(self.ptr)
            self.ptr = None


_CONTEXT: Optional[_Context] = None
_CONTEXT_LOCK = threading.Lock()


def _context() -> _Context:
    global _CONTEXT
    if _CONTEXT is None:
        with _CONTEXT_LOCK:
            if _CONTEXT is None:
                _CONTEXT = _Context()
    return _CONTEXT


class _Program:
    """Owns one tsl_program (and keeps its context alive)."""

    def __init__(self, ctx: _Context, ptr: int) -> None:
        self.ctx = ctx
        self.ptr = ptr
        self.handle = ctypes.c_void_p(ptr)  # for tsl_program_call_direct

    def __del__(self, _free=_L.tsl_program_free) -> None:
        if getattr(self, "ptr", None):
            _free(self.ptr)
            self.ptr = None


class _Args:
    """One thread's tsl_args for one program, and the scratch it fills per call."""

    def __init__(self, prog: _Program, nslots: int, nparams: int) -> None:
        self.prog = prog  # the program outlives its args
        self.ptr = _L.tsl_args_create(prog.ptr)
        if not self.ptr:
            raise MemoryError("tessel: tsl_args_create failed")
        self.handle = ctypes.c_void_p(self.ptr)  # for tsl_program_call_direct
        self.tensors = (ctypes.c_void_p * max(nslots, 1))()
        self.scalars = (ctypes.c_double * max(nparams, 1))()
        self.slots = [_tensors.Slot() for _ in range(nslots)]
        self.allocator = None   # the tsl_allocator last set (kept alive here)

    def __del__(self, _free=_L.tsl_args_free) -> None:
        if getattr(self, "ptr", None):
            _free(self.ptr)
            self.ptr = None


_PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


class _TuneConfig(ctypes.Structure):
    """tsl_tune_config (tessel.h)."""
    _fields_ = [("budget_s", ctypes.c_double), ("generations", ctypes.c_int), ("population", ctypes.c_int),
                ("random_search", ctypes.c_int), ("workers", ctypes.c_int),
                ("devices", ctypes.POINTER(ctypes.c_int)), ("compilers", ctypes.c_int),
                ("candidate_ms", ctypes.c_double), ("timeout_s", ctypes.c_double),
                ("seed", ctypes.c_ulonglong), ("progress", _PROGRESS_FN), ("progress_ctx", ctypes.c_void_p)]


class _TuneResult(ctypes.Structure):
    """tsl_tune_result (tessel.h)."""
    _fields_ = [("default_ms", ctypes.c_double), ("best_ms", ctypes.c_double),
                ("best_options", ctypes.c_char * 400), ("best_device", ctypes.c_int),
                ("tried", ctypes.c_int), ("failed", ctypes.c_int), ("rejected", ctypes.c_int),
                ("generations", ctypes.c_int), ("workers", ctypes.c_int),
                ("timed_by", ctypes.c_int * 16), ("device_of", ctypes.c_int * 16),
                ("wall_s", ctypes.c_double), ("recorded", ctypes.c_int)]


class TuneResult(NamedTuple):
    """What ``Function.tune`` found (tsl_tune_result)."""
    default_ms: float   # the built-in plan's median time
    best_ms: float      # the fastest candidate's
    options: str        # its options as canonical text ("" the defaults)
    tried: int          # candidates timed or failed
    failed: int         # failed to compile, were wrong, faulted or timed out
    generations: int
    wall_s: float
    recorded: bool      # stored for these shapes: later calls use it


class Param(NamedTuple):
    """A parameter or output of a compiled def."""
    name: str
    dtype: str          # "float32", ...
    rank: int           # 0 for scalars
    dims: tuple         # size names or None per dim ("M", "K")
    is_scalar: bool
    is_input: bool      # a parameter (in/out ones too)
    is_output: bool     # listed in -> (...) (in/out ones too)


# type -> describer, filled as types are met (subclasses included)
_DESCRIBERS: dict = {np.ndarray: _tensors.describe_numpy}


_torch_kind = None  # the module, once a torch tensor was met


def _import_torch_kind():
    global _torch_kind
    from . import _torch_kind as tk
    _torch_kind = tk
    return tk


def _describe_any(x: Any, slot: _tensors.Slot, write: bool, what: str):
    fn = _DESCRIBERS.get(type(x))
    if fn is not None:
        return fn(x, slot, write, what)
    t = type(x)
    if t.__module__.startswith("torch"):
        from . import _torch_kind
        import torch
        if isinstance(x, torch.Tensor):
            _fast.torch_ready()  # fast calls of torch tensors from now on
            _DESCRIBERS[t] = _torch_kind.describe
            return _torch_kind.describe(x, slot, write, what)
    if isinstance(x, np.ndarray):
        _DESCRIBERS[t] = _tensors.describe_numpy
        return _tensors.describe_numpy(x, slot, write, what)
    if hasattr(x, "__dlpack__"):
        return _tensors.describe_dlpack(x, slot, write, what)
    if isinstance(x, (bool, int, float, np.generic)) or x is None:
        raise ArgumentError(f"{what} must be a tensor, got {type(x).__name__} {x!r}")
    raise ArgumentError(f"{what} must be a NumPy array, a torch tensor or an object with "
                        f"__dlpack__, got {type(x).__name__}")


def _shape_of(x: Any, ptr: int) -> tuple:
    shape = getattr(x, "shape", None)
    if shape is not None:
        return tuple(shape)
    t = _lib.DLTensor.from_address(ptr)
    return tuple(t.shape[d] for d in range(t.ndim))


class Function:
    """One compiled TC def, callable on tensors.

    ``f(*args, out=None, **kwargs)``: tensor and scalar parameters by
    position (declaration order) or by name; size symbols that no input
    fixes (used only in ``where`` clauses) by name; ``out=`` binds outputs:
    a tensor (one output), a sequence in ``-> (...)`` order (``None``
    entries are allocated), or a dict by output name. In/out tensors (a
    parameter also listed as an output) are updated in place. Returns the
    outputs: one tensor, or a tuple for several.

    Attributes: ``name``, ``params`` and ``outputs`` (lists of ``Param``),
    ``target`` (``"cpu"``, ``"cuda"``, ``"interp"`` or None: chosen per call
    from the tensors' device).
    """

    def __init__(self, prog: _Program, target: Optional[str], source: str, filename: str):
        self._prog = prog
        self._ctx = prog.ctx
        self.target = target
        self._target_code = _TARGETS[target] if target else -1
        #: GPU runs: wait for the stream after each call and raise
        #: BoundsError for a gather index out of range (default: return once
        #: queued, as PyTorch's own ops do; an index out of range reads 0)
        self.sync = False
        self.source = source
        self.filename = filename
        p = prog.ptr
        self.name: str = _L.tsl_program_name(p).decode()
        params = []
        info = _lib.ParamInfo()
        dims = (ctypes.c_char_p * _lib.MAX_RANK)()
        for i in range(_L.tsl_program_param_count(p)):
            _L.tsl_program_param(p, i, ctypes.byref(info))
            _L.tsl_program_param_dims(p, i, dims)
            params.append(Param(info.name.decode(), _L.tsl_dtype_name(info.dtype).decode(), info.rank,
                                tuple(d.decode() if d else None for d in dims[:info.rank]),
                                bool(info.is_scalar), True, bool(info.is_output)))
        self.params: list[Param] = params
        by_name = {q.name: q for q in params}
        outs = []
        for j in range(_L.tsl_program_output_count(p)):
            n = _L.tsl_program_output_name(p, j).decode()
            q = by_name.get(n)
            outs.append(q if q else Param(n, "", -1, (), False, False, True))
        self.outputs: list[Param] = outs
        self._nparams = len(params)
        self._nslots = len(params) + len(outs)
        self._param_index = {q.name: i for i, q in enumerate(params)}
        self._output_index = {q.name: j for j, q in enumerate(outs)}
        self._inout_param = [self._param_index[q.name] if q.is_input else -1 for q in outs]
        self._write = [q.is_output for q in params]
        self._scalar = [q.is_scalar for q in params]
        self._scalar_idx = [i for i, q in enumerate(params) if q.is_scalar]
        self._tensor_idx = [(i, q.is_output) for i, q in enumerate(params) if not q.is_scalar]
        # the output index when there is exactly one and it is not in/out
        self._single_out = 0 if len(outs) == 1 and not outs[0].is_input else -1
        self._what = [f"parameter '{q.name}'" for q in params] + [f"output '{q.name}'" for q in outs]
        self._names_b = [q.name.encode() for q in outs]
        self._shapes: dict = {}  # input shapes (+ sizes) -> [(shape, dtype) per allocated output]
        self._local = threading.local()
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(q.name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for q in params] +
            [inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)])
        self.__doc__ = f"TC def {self.name}{self._decl()} (compiled by tessel.compile)"
        if _fast.AVAILABLE:
            # calls go to a __call__ generated for this def (_fast.py): a
            # class of its own, since Python looks __call__ up on the type
            self.__class__ = type("Function", (Function,), {"__call__": _fast.make_call(self, _call_general),
                                                            "__module__": Function.__module__,
                                                            "__doc__": Function.__doc__})

    # ---- introspection --------------------------------------------------

    def _decl(self) -> str:
        ps = ", ".join(f"{q.dtype} {q.name}" if q.is_scalar else
                       f"{q.dtype}({','.join(d or '?' for d in q.dims)}) {q.name}" for q in self.params)
        return f"({ps}) -> ({', '.join(q.name for q in self.outputs)})"

    def __repr__(self) -> str:
        return f"<tessel.Function {self.name}{self._decl()} target={self.target or 'auto'}>"

    @property
    def options(self) -> str:
        """The options in effect, as canonical text: only what differs from
        the defaults (``""`` for the built-in plans)."""
        return (_L.tsl_program_options(self._prog.ptr) or b"").decode()

    def emit(self, what: str = "tile") -> str:
        """The program as text at one stage of the compiler:

        ``"ast"`` (the checked program), ``"ranges"`` (every inferred range),
        ``"graph"`` (ops and kernel groups), ``"tile"`` (the scheduled tile
        IR and launch plan for this function's target; ``"tile:cpu"`` /
        ``"tile:cuda"`` name one), ``"expand"`` (pipelines expanded),
        ``"select"`` (after instruction selection), ``"source"`` (the
        generated code), ``"plan"`` (the launch plan the executor runs) —
        each of these with ``:cpu`` or ``:cuda``, and for CUDA an arch
        (``"plan:cuda:sm_90a"``; default sm_80) —, ``"c"`` (generated C),
        ``"cuda"`` (generated CUDA C), ``"ptx"`` (NVRTC's PTX; needs NVRTC,
        not a GPU). The compile options apply.
        """
        if what in ("tile", "expand", "select", "source", "plan"):
            what += ":cuda" if self.target == "cuda" else ":cpu"
        out = ctypes.c_void_p()
        st = _L.tsl_program_emit(self._prog.ptr, what.encode(), ctypes.byref(out))
        if st:
            raise self._ctx.error(st)
        return _lib.take_string(out)

    def bench(self, *args: Any, reps: int = 50, warmup: int = 3, out: Any = None, **kwargs: Any) -> float:
        """Median milliseconds of ``reps`` calls ``f(*args, out=out, **kwargs)``
        after ``warmup`` ones (the first call compiles): the whole call, the
        Python layer and the kernels. Calls on CUDA tensors are timed with
        CUDA events on PyTorch's current stream, others with the monotonic
        clock. The C API has no benchmark entry point; this times calls as
        a user makes them (``tessel run --bench`` times kernels alone).
        """
        import time
        if reps < 1 or warmup < 0:
            raise ArgumentError(f"bench: reps must be >= 1 and warmup >= 0, got {reps}, {warmup}")
        for _ in range(max(warmup, 1)):
            self(*args, out=out, **kwargs)
        cuda = None
        for x in list(args) + list(kwargs.values()):
            if type(x).__module__.startswith("torch") and getattr(x, "is_cuda", False):
                import torch
                cuda = torch.cuda
                break
        times = []
        if cuda is not None:
            ev = [(cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)) for _ in range(reps)]
            for e0, e1 in ev:
                e0.record()
                self(*args, out=out, **kwargs)
                e1.record()
            cuda.synchronize()
            times = [e0.elapsed_time(e1) for e0, e1 in ev]
        else:
            for _ in range(reps):
                t0 = time.perf_counter()
                self(*args, out=out, **kwargs)
                times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        return times[len(times) // 2]

    def tune(self, *args: Any, budget: float = 60.0, generations: int = 0, population: int = 0,
             search: str = "genetic", workers: int = 0, seed: int = 0, progress: Any = None,
             **kwargs: Any) -> TuneResult:
        """Search the strategies' options for the fastest plan at these
        arguments' shapes (tsl_program_tune; ``tessel tune`` on the command
        line): candidates are compiled in parallel, checked against the
        interpreter on these inputs, then timed. The best is recorded in
        the cache for (program, shapes, arch), and later calls at those
        shapes use it unless this function's options were set. ``budget``
        in seconds; ``generations``/``population``/``workers`` 0 take the
        defaults; ``search`` is ``"genetic"`` or ``"random"``; ``progress``
        is called with one line per generation. On CUDA, call it before
        the process has used CUDA (the workers fork)."""
        if search not in ("genetic", "random"):
            raise ArgumentError(f"tune: search is 'genetic' or 'random', not {search!r}")
        if not budget > 0:
            raise ArgumentError(f"tune: budget must be > 0 seconds, got {budget!r}")
        n = self._nparams
        args, sizes = self._bind_general(args, kwargs)
        a = self._sized_args(sizes) if sizes else _Args(self._prog, self._nslots, self._nparams)
        keep = []
        dev_type = -1
        for i in self._scalar_idx:
            try:
                a.scalars[i] = float(args[i])
            except (TypeError, ValueError):
                raise ArgumentError(f"{self._what[i]} is a scalar ({self.params[i].dtype}); "
                                    f"got {type(args[i]).__name__}") from None
        for i, write in self._tensor_idx:
            ptr, k, _, dt, _ = _describe_any(args[i], a.slots[i], write, self._what[i])
            a.tensors[i] = ptr
            keep.append(k)
            if dev_type < 0:
                dev_type = dt
        for j in range(len(self.outputs)):
            a.tensors[n + j] = None  # the args allocate them
        st = _L.tsl_args_bind(a.ptr, a.tensors, a.scalars)
        if st:
            raise self._ctx.error(st)
        if self._target_code >= 0:
            target = self._target_code
        else:
            target = 2 if dev_type == _kDLCUDA else 1
        cb = _PROGRESS_FN(lambda _ctx, line: progress(line.decode(errors="replace"))) if progress else _PROGRESS_FN()
        cfg = _TuneConfig(budget_s=float(budget), generations=int(generations), population=int(population),
                          random_search=int(search == "random"), workers=int(workers), seed=int(seed),
                          progress=cb)
        res = _TuneResult()
        st = _L.tsl_program_tune(self._prog.ptr, a.ptr, target, ctypes.byref(cfg), ctypes.byref(res))
        del keep
        if st:
            raise self._ctx.error(st)
        return TuneResult(res.default_ms, res.best_ms, res.best_options.decode(errors="replace"), res.tried,
                          res.failed, res.generations, res.wall_s, bool(res.recorded))

    def output_shapes(self, *shapes: Sequence[int], **sizes: int) -> list:
        """[(shape, dtype)] of every output (``-> (...)`` order) when the
        tensor parameters have these shapes (declaration order, scalars
        left out); size symbols that no input fixes by name. Reads no data.

        >>> mm.output_shapes((3, 4), (4, 5))   # doctest: +SKIP
        [((3, 5), 'float32')]
        """
        return _output_shapes(self, shapes, sizes)

    # ---- calling ----------------------------------------------------------

    def _thread_args(self) -> _Args:
        a = _Args(self._prog, self._nslots, self._nparams)
        self._local.args = a
        return a

    def _fast_state(self) -> "_fast.FastState":
        """This thread's fast-call scratch over its args (made at its first call)."""
        a = getattr(self._local, "args", None) or self._thread_args()
        fs = self._local.fast = _fast.FastState(self, a)
        return fs

    def _bind_general(self, args: tuple, kwargs: dict) -> tuple[list, dict]:
        n = self._nparams
        if len(args) > n:
            raise ArgumentError(f"{self.name}() takes {n} argument{'s' if n != 1 else ''} "
                                f"({', '.join(q.name for q in self.params)}) but {len(args)} were given")
        values = list(args) + [_MISSING] * (n - len(args))
        sizes = {}
        for k, v in kwargs.items():
            i = self._param_index.get(k)
            if i is None:
                sizes[k] = v  # a size symbol, checked by the C API
            elif values[i] is not _MISSING:
                raise ArgumentError(f"{self.name}() got multiple values for argument '{k}'")
            else:
                values[i] = v
        missing = [self.params[i].name for i in range(n) if values[i] is _MISSING]
        if missing:
            raise ArgumentError(f"{self.name}() missing argument{'s' if len(missing) > 1 else ''}: "
                                f"{', '.join(repr(m) for m in missing)} (declared {self._decl()})")
        return values, sizes

    def _bind_out(self, out: Any) -> list:
        outs = self.outputs
        if isinstance(out, dict):
            res = [None] * len(outs)
            for k, v in out.items():
                j = self._output_index.get(k)
                if j is None:
                    raise ArgumentError(f"out=: '{self.name}' has no output named '{k}' "
                                        f"(outputs: {', '.join(q.name for q in outs)})")
                res[j] = v
            return res
        if isinstance(out, (list, tuple)):
            if len(out) != len(outs):
                raise ArgumentError(f"out=: '{self.name}' has {len(outs)} outputs "
                                    f"({', '.join(q.name for q in outs)}), {len(out)} given")
            return list(out)
        if len(outs) != 1:
            raise ArgumentError(f"out=: '{self.name}' has {len(outs)} outputs; pass a tuple or a dict")
        return [out]

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        return self._call_general(*args, out=out, **kwargs)

    def _call_general(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        """A call of any arguments (the generated __call__ handles the
        common cases itself and hands the rest here)."""
        n = self._nparams
        sizes = None
        if kwargs or len(args) != n:
            args, sizes = self._bind_general(args, kwargs)
        if sizes:
            a = self._sized_args(sizes)  # size symbols stay set: args of its own
        else:
            a = getattr(self._local, "args", None) or self._thread_args()
        tensors = a.tensors
        slots = a.slots
        keep = []
        kind = None
        dev_type = dev_id = -1
        for i in self._scalar_idx:
            v = args[i]
            try:
                a.scalars[i] = v
            except TypeError:
                try:
                    a.scalars[i] = float(v)
                except (TypeError, ValueError):
                    raise ArgumentError(f"{self._what[i]} is a scalar ({self.params[i].dtype}); "
                                        f"got {type(v).__name__}") from None
        for i, write in self._tensor_idx:
            v = args[i]
            if type(v) is _ndarray and not write:  # the common case, inline
                try:
                    k = v.__dlpack__()
                    tensors[i] = _get_pointer(k, b"dltensor")
                    keep.append(k)
                    if kind is None:
                        kind, dev_type, dev_id = _NUMPY, _kDLCPU, 0
                    continue
                except (BufferError, TypeError):
                    pass
            ptr, k, kd, dt, di = _describe_any(v, slots[i], write, self._what[i])
            tensors[i] = ptr
            keep.append(k)
            if kind is None:
                kind, dev_type, dev_id = kd, dt, di
        if kind is None:
            kind, dev_type, dev_id = _NUMPY, _kDLCPU, 0
        if out is not None and self._single_out >= 0 and not isinstance(out, (tuple, list, dict)):
            j = n + self._single_out
            k = None
            if type(out) is _ndarray:  # inline; legacy DLPack refuses a read-only array
                try:
                    k = out.__dlpack__()
                    tensors[j] = _get_pointer(k, b"dltensor")
                except (BufferError, TypeError):
                    k = None
            if k is None:
                ptr, k, _, _, _ = _describe_any(out, slots[j], True, self._what[j])
                tensors[j] = ptr
            keep.append(k)
            results = [out]
        else:
            results = self._outputs(a, args, out, kind, keep, sizes)
        if dev_type == _kDLCUDA:
            self._cuda_setup(a, kind, dev_id)
            target = self._target_code if self._target_code >= 0 else 2
        else:
            target = self._target_code if self._target_code >= 0 else 1
        st = _L.tsl_program_call_direct(self._prog.handle, a.handle, tensors, a.scalars, target)
        if st:
            raise self._ctx.error(st)
        del keep
        return results[0] if len(results) == 1 else tuple(results)

    def _sized_args(self, sizes: dict) -> "_Args":
        a = _Args(self._prog, self._nslots, self._nparams)
        for k, v in sizes.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ArgumentError(f"size {k} must be an int, got {v!r}")
            st = _L.tsl_args_set_scalar(a.ptr, k.encode(), float(v))
            if st:
                raise self._ctx.error(st)
        return a

    def _outputs(self, a: "_Args", args: Sequence, out: Any, kind: Any, keep: list,
                 sizes: Optional[dict]) -> list:
        """Bind every output into a's tensor array (the caller's from out=,
        in/out ones as their parameters, the rest allocated like the first
        tensor argument); returns the output objects in order."""
        n = self._nparams
        tensors = a.tensors
        slots = a.slots
        outs = self.outputs
        results = [None] * len(outs)
        given = self._bind_out(out) if out is not None else None
        need_alloc = False
        for j in range(len(outs)):
            pi = self._inout_param[j]
            if pi >= 0:
                results[j] = args[pi]
                tensors[n + j] = None
                if given is not None and given[j] is not None and given[j] is not args[pi]:
                    raise ArgumentError(f"out=: '{outs[j].name}' is in/out: it is written in place in "
                                        f"its parameter")
                continue
            o = given[j] if given is not None else None
            if o is None:
                need_alloc = True
                tensors[n + j] = None
                continue
            ptr, k, _, _, _ = _describe_any(o, slots[n + j], True, self._what[n + j])
            tensors[n + j] = ptr
            keep.append(k)
            results[j] = o
        if need_alloc:
            key = tuple(_shape_of(args[i], tensors[i]) for i, _ in self._tensor_idx)
            if sizes:
                key += (tuple(sorted(sizes.items())),)
            plan = self._shapes.get(key)
            if plan is None:
                plan = self._infer(a, key)
            for j, shape, dtype in plan:
                if results[j] is None:
                    o = kind.empty(shape, dtype, None)
                    ptr, k, _, _, _ = _describe_any(o, slots[n + j], True, self._what[n + j])
                    tensors[n + j] = ptr
                    keep.append(k)
                    results[j] = o
        return results

    def _cuda_setup(self, a: _Args, kind: Any, dev_id: int) -> None:
        """The stream, allocator and sync mode of a GPU run on a's C args."""
        stream = 0
        if kind.name == "torch":
            tk = _torch_kind or _import_torch_kind()
            stream = tk.current_stream(dev_id)
            if a.allocator is None:
                al = tk.allocator()
                st = _L.tsl_args_set_allocator(a.ptr, ctypes.byref(al.struct))
                if st:
                    raise self._ctx.error(st)
                a.allocator = al
        # set every time: the fast call's tsl_program_call_dlpack sets them too
        _L.tsl_args_set_stream(a.ptr, stream or None)
        _L.tsl_args_set_sync(a.ptr, 1 if self.sync else 0)

    def _infer(self, a: _Args, key: tuple) -> list:
        """Shapes of the outputs to allocate, from the inputs bound in a's
        tensor array (outputs unbound): cached per input shapes."""
        n = self._nparams
        saved = [a.tensors[n + j] for j in range(len(self.outputs))]
        for j in range(len(self.outputs)):
            a.tensors[n + j] = None
        st = _L.tsl_args_bind(a.ptr, a.tensors, a.scalars)
        if not st:
            st = _L.tsl_args_infer(a.ptr)
        if st:
            raise self._ctx.error(st)
        for j in range(len(self.outputs)):
            a.tensors[n + j] = saved[j]
        plan = []
        rank = ctypes.c_int()
        shape = (ctypes.c_int64 * _lib.MAX_RANK)()
        dtype = ctypes.c_int()
        for j, q in enumerate(self.outputs):
            if q.is_input:
                continue
            st = _L.tsl_args_output_shape(a.ptr, self._names_b[j], ctypes.byref(rank), shape,
                                          ctypes.byref(dtype))
            if st:
                raise self._ctx.error(st)
            plan.append((j, tuple(shape[:rank.value]), _L.tsl_dtype_name(dtype.value).decode()))
        if len(self._shapes) > 1024:
            self._shapes.clear()
        self._shapes[key] = plan
        return plan


def _call_general(f: Function, args: tuple, out: Any, kwargs: dict) -> Any:
    return f._call_general(*args, out=out, **kwargs)


def _output_shapes(f: "Function", shapes: Sequence[Sequence[int]], sizes: Optional[dict] = None) -> list:
    """f's output shapes for tensor parameters of the given shapes (in
    declaration order, scalars skipped), without any data: what shape
    functions (torch.library's fake kernels) need."""
    n = f._nparams
    a = _Args(f._prog, f._nslots, n)
    tparams = [i for i in range(n) if not f._scalar[i]]
    if len(shapes) != len(tparams):
        raise ArgumentError(f"{f.name}: {len(tparams)} tensor parameters, {len(shapes)} shapes given")
    for k, v in (sizes or {}).items():
        st = _L.tsl_args_set_scalar(a.ptr, k.encode(), float(v))
        if st:
            raise f._ctx.error(st)
    for i, shape in zip(tparams, shapes):
        shape = tuple(int(d) for d in shape)
        code, bits = _tensors.DL_CODES[f.params[i].dtype]  # every dtype the library has
        slot = a.slots[i]
        slot.last = None  # written here: no describer's memo of it holds
        r = len(shape)
        if r > _lib.MAX_RANK:
            raise ArgumentError(f"{f._what[i]}: rank {r} is more than {_lib.MAX_RANK}")
        # no data is read: any non-NULL address will do
        _tensors._SLOT_STRUCTS[r].pack_into(slot.buf, 0, 64, _tensors.kDLCPU, 0, r, code, bits, 1,
                                            slot.addr + 48, 0, 0, *shape, *([0] * r))
        a.tensors[i] = slot.addr
    for j in range(len(f.outputs)):
        a.tensors[n + j] = None
    st = _L.tsl_args_bind(a.ptr, a.tensors, a.scalars)
    if not st:
        st = _L.tsl_args_infer(a.ptr)
    if st:
        raise f._ctx.error(st)
    res = []
    rank = ctypes.c_int()
    shp = (ctypes.c_int64 * _lib.MAX_RANK)()
    dtype = ctypes.c_int()
    for j in range(len(f.outputs)):
        st = _L.tsl_args_output_shape(a.ptr, f._names_b[j], ctypes.byref(rank), shp, ctypes.byref(dtype))
        if st:
            raise f._ctx.error(st)
        res.append((tuple(shp[:rank.value]), _L.tsl_dtype_name(dtype.value).decode()))
    return res


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _options_text(options: Union[str, dict, None]) -> str:
    if options is None:
        return ""
    if isinstance(options, dict):
        return ",".join(f"{k}={v}" for k, v in options.items())
    if isinstance(options, str):
        return options
    raise ArgumentError(f"tessel.compile: options must be a str ('key=value,...') or a dict, "
                        f"not {type(options).__name__}")


def compile(src: str, entry: Optional[str] = None, target: Optional[str] = None, *,
            options: Union[str, dict, None] = None, allow_tf32: bool = False,
            filename: str = "<tc>") -> Function:
    """Compile one ``def`` of Tensor Comprehensions source.

    Args:
        src: the TC source (one or more ``def``).
        entry: the def to compile; None means the only one.
        target: ``"cpu"``, ``"cuda"`` or ``"interp"`` (the reference
            interpreter); None chooses per call from the tensors' device.
        options: the strategies' choices, as ``"key=value,..."`` text or a
            dict (``{"cpu.threads": 1}``); ``tessel.options_space()`` lists
            every key, its default and its values. None: the built-in plans.
            A bad key or value raises ``ArgumentError`` naming it.
        allow_tf32: let f32 contractions on CUDA use tf32 tensor cores (A
            and B rounded to 10 fraction bits before each product, f32
            accumulation; ``tsl_program_set_allow_tf32``). Default False:
            float32 programs stay exact float32.
        filename: the name diagnostics give the source.

    Returns a ``Function``. Errors in the source raise ``CompileError`` whose
    message is the diagnostic with ``filename:line:col``, the line and a
    caret. Kernels are generated and compiled at the first call (and cached
    on disk, so a later process compiles nothing).
    """
    if not isinstance(src, str):
        raise ArgumentError(f"tessel.compile: src must be a str of TC source, got {type(src).__name__}")
    if target is not None and target not in _TARGETS:
        raise ArgumentError(f"tessel.compile: target must be 'cpu', 'cuda', 'interp' or None, not {target!r}")
    if "\0" in src:
        raise ArgumentError("tessel.compile: the source contains a NUL character")
    opts = _options_text(options)
    if "\0" in opts:
        raise ArgumentError("tessel.compile: the options contain a NUL character")
    if not isinstance(allow_tf32, bool):
        raise ArgumentError(f"tessel.compile: allow_tf32 must be a bool, not {type(allow_tf32).__name__}")
    ctx = _context()
    out = ctypes.c_void_p()
    st = _L.tsl_program_compile(ctx.ptr, src.encode(), filename.encode(),
                                entry.encode() if entry is not None else None, ctypes.byref(out))
    if st:
        raise ctx.error(st)
    prog = _Program(ctx, out.value)
    if allow_tf32:
        st = _L.tsl_program_set_allow_tf32(prog.ptr, 1)
        if st:
            raise ctx.error(st)
    if opts:
        st = _L.tsl_program_set_options(prog.ptr, opts.encode())
        if st:
            raise ctx.error(st)
    return Function(prog, target, src, filename)


def options_space() -> str:
    """Every option ``tessel.compile(..., options=)`` takes: one line per
    key with its target, default, values and meaning (what ``tessel tune
    --space`` prints)."""
    return _lib.take_string(ctypes.c_void_p(_L.tsl_options_space()))


def compile_file(path: Union[str, os.PathLike], entry: Optional[str] = None,
                 target: Optional[str] = None) -> Function:
    """``compile`` on the contents of a ``.tc`` file (diagnostics name the file)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    return compile(src, entry, target, filename=os.fspath(path))


def layout(expr: str, json: bool = False) -> Union[str, dict]:
    """A layout expression's mapping, as ``tessel layout EXPR`` prints it.

    ``tessel.layout("(2,3):(3,1)")`` gives the header line and the grid of
    offsets (mode 0 down); ``json=True`` gives the parsed JSON object
    (shape, stride, size, cosize and the whole map; for distributed layouts
    the thread, local and coordinate of every element). See docs/layout.md.
    """
    ctx = _context()
    out = ctypes.c_void_p()
    st = _L.tsl_layout_table(ctx.ptr, expr.encode(), 1 if json else 0, ctypes.byref(out))
    if st:
        raise ctx.error(st)
    text = _lib.take_string(out)
    if json:
        import json as _json
        return _json.loads(text)
    return text
