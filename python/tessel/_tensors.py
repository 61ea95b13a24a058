"""Framework tensors seen as DLPack DLTensors, without copying.

``describe(x, slot)`` gives the address of a DLTensor that describes x's
own memory, valid while the returned keep-alive object lives:

- NumPy arrays and any object with ``__dlpack__``: the producer's own
  DLTensor, read from its DLPack capsule (the capsule is not consumed: its
  destructor frees it when the keep-alive goes);
- PyTorch tensors: a DLTensor written into a per-thread slot buffer from
  ``data_ptr()``, ``shape`` and ``stride()`` (``torch.Tensor.__dlpack__``
  costs about 4 us; this costs well under 1).

``Kind`` knows how to allocate an output like a given input (NumPy array,
torch tensor on the same device).
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any

import numpy as np

from .errors import ArgumentError

kDLCPU, kDLCUDA, kDLCUDAHost = 1, 2, 3

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# DLManagedTensorVersioned (DLPack 1.0): version, manager_ctx, deleter,
# flags, then the DLTensor
_VERSIONED_TENSOR_OFFSET = 32
_FLAG_READ_ONLY = 1

def _dl_codes() -> dict:
    """tessel dtype name -> (DLPack code, bits), every dtype the library
    has (the low-bit ones included), in its enum order."""
    from . import _lib
    L = _lib.lib
    L.tsl_dtype_to_dlpack.restype = _lib.DLDataType
    L.tsl_dtype_to_dlpack.argtypes = [ctypes.c_int]
    codes = {}
    for i in range(256):
        name = L.tsl_dtype_name(i)
        if not name or name == b"?":
            break
        d = L.tsl_dtype_to_dlpack(i)
        codes[name.decode()] = (d.code, d.bits)
    return codes


DL_CODES = _dl_codes()
NUMPY_DTYPES = {name: np.dtype(name) for name in
                ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "bool")}

# ---- the per-thread slot buffer a torch tensor is written into ------------
# DLTensor (48 bytes: data, device type/id, ndim, dtype code/bits/lanes,
# shape*, strides*, byte_offset), then shape[8] and strides[8] (int64).
SLOT_BYTES = 48 + 2 * 8 * 8
_SLOT_STRUCTS = [struct.Struct("<QiiiBBHQQQ%dq%dx%dq" % (r, (8 - r) * 8, r)) for r in range(9)]


class Slot:
    """Scratch memory for one DLTensor that this package fills itself."""
    __slots__ = ("buf", "addr", "last")

    def __init__(self) -> None:
        self.buf = ctypes.create_string_buffer(SLOT_BYTES)
        self.addr = ctypes.addressof(self.buf)
        self.last = None  # what a describer last wrote here (_torch_kind.describe)


class Kind:
    """How to allocate outputs like a given input tensor."""
    name = "numpy"

    def empty(self, shape: tuple, dtype: str, like: Any) -> Any:
        if dtype not in NUMPY_DTYPES:
            raise ArgumentError(f"NumPy has no {dtype}: pass the output with out= (or use torch tensors)")
        return np.empty(shape, NUMPY_DTYPES[dtype])


NUMPY = Kind()


def _capsule(x: Any, write: bool, what: str, stream: Any = None) -> tuple[int, Any]:
    """(address of the DLTensor, capsule) from x.__dlpack__()."""
    try:
        cap = x.__dlpack__() if stream is None else x.__dlpack__(stream=stream)
        return _get_pointer(cap, b"dltensor"), cap
    except BufferError as e:
        # NumPy refuses read-only arrays unless DLPack 1.0 can flag them
        try:
            cap = x.__dlpack__(max_version=(1, 0))
        except (TypeError, BufferError):
            raise ArgumentError(f"{what}: cannot be read through DLPack: {e}") from None
        ptr = _get_pointer(cap, b"dltensor_versioned")
        flags = ctypes.c_uint64.from_address(ptr + 24).value
        if write and flags & _FLAG_READ_ONLY:
            raise ArgumentError(f"{what} is read-only but tessel writes it") from None
        return ptr + _VERSIONED_TENSOR_OFFSET, cap
    except (TypeError, AttributeError) as e:
        raise ArgumentError(f"{what}: {type(x).__name__} cannot be exported through DLPack: {e}") from None


def describe_numpy(x: np.ndarray, slot: Slot, write: bool, what: str) -> tuple[int, Any, Kind, int, int]:
    if write and not x.flags.writeable:
        raise ArgumentError(f"{what} is a read-only array but tessel writes it")
    try:
        cap = x.__dlpack__()
        return _get_pointer(cap, b"dltensor"), cap, NUMPY, kDLCPU, 0
    except (BufferError, TypeError):
        if x.dtype.name not in NUMPY_DTYPES:  # object, complex, datetime, ...
            raise ArgumentError(f"{what}: NumPy dtype {x.dtype} is not a tessel dtype "
                                f"({', '.join(NUMPY_DTYPES)} from NumPy)") from None
        ptr, cap = _capsule(x, write, what)  # read-only: through DLPack 1.0
        return ptr, cap, NUMPY, kDLCPU, 0


def describe_dlpack(x: Any, slot: Slot, write: bool, what: str) -> tuple[int, Any, Kind, int, int]:
    """Any other producer: its DLPack capsule; outputs like it are NumPy
    arrays on the CPU and torch tensors on CUDA."""
    try:
        dev_type, dev_id = x.__dlpack_device__()
    except AttributeError:
        dev_type, dev_id = kDLCPU, 0
    stream = 1 if dev_type == kDLCUDA else None  # DLPack: 1 is CUDA's legacy default stream
    ptr, cap = _capsule(x, write, what, stream)
    kind = NUMPY
    if dev_type == kDLCUDA:
        from . import _torch_kind  # outputs on a GPU: torch tensors
        kind = _torch_kind.kind_for_device(dev_id)
    return ptr, cap, kind, int(dev_type), int(dev_id)
