"""tessel functions as PyTorch custom ops (``torch.library``).

``tessel.torch.op(f, "mylib::name")`` registers a compiled tessel function
as a custom operator, so that models calling it work under
``torch.compile`` (the op is opaque: Dynamo and Inductor see one call with
a shape function, not its insides) and inside CUDA graphs (the op runs on
the current stream, allocates its outputs through PyTorch's caching
allocator and neither synchronizes nor copies).

Schema: one ``Tensor`` per tensor parameter, ``float``/``int``/``bool`` per
scalar parameter (by its TC type), returning the outputs that are not
in/out (a tensor, a tuple of them, or nothing); in/out parameters are
declared mutated (``Tensor(a!)``) and updated in place.

Under ``torch.compile`` with dynamic shapes, the shape function reads
concrete sizes: each new size is a recompilation, as with a static shape.
"""
from __future__ import annotations

from typing import Any, Callable

import torch as _torch

from .function import Function
from .errors import ArgumentError

__all__ = ["op"]

_FLOATS = {"float16", "bfloat16", "float32", "float64"}


def _scalar_type(dtype: str) -> str:
    if dtype in _FLOATS:
        return "float"
    return "bool" if dtype == "bool" else "int"


def op(f: Function, name: str) -> Callable[..., Any]:
    """Register ``f`` as the custom op ``name`` (``"namespace::opname"``) and
    return it (callable like ``f``, by position or name, no ``out=``).

    >>> softmax = tessel.torch.op(tessel.compile(SOFTMAX), "mylib::softmax")  # doctest: +SKIP
    >>> y = torch.compile(lambda x: softmax(x) * 2)(x)                          # doctest: +SKIP
    """
    if not isinstance(f, Function):
        raise ArgumentError(f"tessel.torch.op: f must be a tessel.Function, got {type(f).__name__}")
    if "::" not in name:
        raise ArgumentError(f"tessel.torch.op: name must be 'namespace::opname', got {name!r}")
    params = f.params
    args = []
    mutated = []
    alias = iter("abcdefghijklmnopqrstuvwxyz")
    for q in params:
        if q.is_scalar:
            args.append(f"{_scalar_type(q.dtype)} {q.name}")
        elif q.is_output:
            args.append(f"Tensor({next(alias)}!) {q.name}")
            mutated.append(q.name)
        else:
            args.append(f"Tensor {q.name}")
    returned = [j for j, q in enumerate(f.outputs) if not q.is_input]
    ret = "Tensor" if len(returned) == 1 else "(" + ", ".join("Tensor" for _ in returned) + ")"
    schema = f"({', '.join(args)}) -> {ret}"
    tensor_idx = [i for i, q in enumerate(params) if not q.is_scalar]
    nparams = len(params)

    def _pick(results: Any) -> Any:
        if len(f.outputs) == 1:
            results = (results,)
        picked = [results[j] for j in returned]
        if not picked:
            return None
        return picked[0] if len(picked) == 1 else tuple(picked)

    def impl(*args: Any) -> Any:
        return _pick(f(*args))

    def fake(*args: Any) -> Any:
        shapes = [tuple(args[i].shape) for i in tensor_idx]
        outs = f.output_shapes(*shapes)
        dev = args[tensor_idx[0]].device if tensor_idx else _torch.device("cpu")
        from ._torch_kind import TORCH_DTYPES
        res = [_torch.empty(s, dtype=TORCH_DTYPES[d], device=dev) for s, d in outs]
        return _pick(tuple(res) if len(res) != 1 else res[0])

    custom = _torch.library.custom_op(name, impl, mutates_args=tuple(mutated), schema=schema)
    custom.register_fake(fake)

    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            vals = list(args) + [None] * (nparams - len(args))
            for k, v in kwargs.items():
                if k not in f._param_index:
                    raise ArgumentError(f"{name}() got an unexpected argument '{k}'")
                vals[f._param_index[k]] = v
            args = tuple(vals)
        return custom(*args)

    call.__name__ = name.split("::")[-1]
    call.__doc__ = f"torch custom op {name}{schema}: tessel def {f.name}"
    call.op = custom  # type: ignore[attr-defined]
    call.schema = schema  # type: ignore[attr-defined]
    return call
