"""tessel: Tensor Comprehensions compiled to C and CUDA, called on NumPy and
PyTorch tensors.

Write the mathematics of a tensor computation in TC notation; tessel infers
every range and output shape, fuses the statements into kernels, generates
C (CPU) or CUDA C (NVIDIA GPUs, through NVRTC) and runs it on your tensors
in place: no copy of a tensor that is already where the kernel runs.

A first function
----------------
>>> import numpy as np, tessel
>>> mm = tessel.compile('''
... def mm(float(M,K) A, float(K,N) B) -> (C) {
...   C(m,n) +=! A(m,k) * B(k,n)
... }''')
>>> A = np.random.rand(3, 4).astype(np.float32)
>>> B = np.random.rand(4, 5).astype(np.float32)
>>> C = mm(A, B)                       # a new NumPy array of shape (3, 5)
>>> bool(np.allclose(C, A @ B, rtol=1e-5))
True

Arguments go by position in declaration order or by name (``mm(B=B,
A=A)``); scalars are Python numbers (``def f(float(N) X, float a)`` is
called ``f(X, a=0.5)``). One output is returned as a tensor, several as a
tuple in ``-> (...)`` order.

Outputs and in-place updates
----------------------------
``out=`` writes into tensors you already have: a tensor for one output, a
tuple in output order (``None`` to allocate that one), or a dict by name.
A tensor that is both a parameter and an output is updated in place:

>>> inc = tessel.compile("def inc(float(N) Y) -> (Y) { Y(i) += 1 }")
>>> y = np.zeros(4, np.float32)
>>> _ = inc(y); y
array([1., 1., 1., 1.], dtype=float32)

Tensors
-------
NumPy arrays, PyTorch tensors (CPU and CUDA) and any object with
``__dlpack__`` are read and written where they are: strided views and
offsets included. The results are of the same kind, on the same device, as
the first tensor argument. With ``target=None`` (the default) the tensors'
device picks the target: CPU tensors run the generated C, CUDA tensors the
generated CUDA on PyTorch's current stream. ``target="interp"`` runs the
reference interpreter (the oracle for every result); ``target="cuda"`` on
host tensors copies them to the GPU and back.

The dtypes: float16, bfloat16 (torch), float32, float64, int8..int64,
uint8..uint64, bool, and float8e4m3 / float8e5m2 (torch's float8_e4m3fn /
float8_e5m2). A tensor's dtype must be the one the def declares.

Errors
------
Every error is a ``tessel.Error``; its message is the full diagnostic:

>>> try:
...     tessel.compile("def f(float(N) A) -> (B) {\\n  B(i) = A(i) +\\n}")
... except tessel.CompileError as e:
...     print(e)
<tc>:3:1: error: expected an expression, found '}'
}
^

Subclasses: ``CompileError`` (source and generated code), ``ShapeError``
(tensors disagree with the declaration or each other; also a
``ValueError``), ``ArgumentError`` (wrong arguments, dtype or device; also a
``TypeError``), ``BoundsError`` (a gather index out of range),
``UnavailableError`` (no GPU, no compiler), ``RuntimeError``,
``OutOfMemoryError``, ``FileError`` and ``InternalError``.

Looking inside
--------------
``f.emit(what)`` prints a stage of the compiler: ``"ast"``, ``"ranges"``,
``"graph"``, ``"tile"`` (the tile IR and launch plan), ``"expand"``,
``"select"``, ``"source"``, ``"plan"`` (the launch plan as the executor runs
it), ``"c"``, ``"cuda"`` and ``"ptx"``. ``tessel.layout("local(2,1).spatial(8,4)")`` prints a
layout's mapping as ``tessel layout`` does.

Options
-------
``tessel.compile(src, options="cpu.threads=1")`` (or a dict) sets the
strategies' choices — tile sizes, threads, pipelines — for that function;
``tessel.options_space()`` lists them and ``f.options`` shows those in
effect. The defaults are the built-in plans.

PyTorch
-------
``tessel.torch.op(f, "mylib::name")`` registers ``f`` as a
``torch.library`` custom op with a shape function, so a model that calls it
works under ``torch.compile`` (as one opaque op) and in CUDA graphs.

Threads and caching
-------------------
One compiled function may be called from many threads at once. Kernels
are compiled at the first call and cached on disk (``$TESSEL_CACHE_DIR``,
else ``~/.cache/tessel``); a later process loads them without compiling.
"""
from __future__ import annotations

from .errors import (ArgumentError, BoundsError, CompileError, Error, FileError, InternalError,
                     OutOfMemoryError, RuntimeError, ShapeError, UnavailableError)
from .function import Function, Param, TuneResult, compile, compile_file, layout, options_space
from ._lib import library_path

__version__ = "0.1.0"

__all__ = ["compile", "compile_file", "layout", "options_space", "Function", "Param", "TuneResult", "Error",
           "CompileError",
           "ShapeError", "ArgumentError", "BoundsError", "UnavailableError", "RuntimeError",
           "OutOfMemoryError", "FileError", "InternalError", "library_path", "__version__"]
