"""PyTorch tensors for tessel: dtypes, the fast DLTensor fill, output
allocation on the input's device, and the current CUDA stream. Imported
only when a torch tensor is passed (or torch outputs are needed)."""
from __future__ import annotations

from typing import Any

import torch

from . import _tensors
from .errors import ArgumentError

_TORCH_DTYPES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "bool": torch.bool,
}
for _n in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _n):
        _TORCH_DTYPES[_n] = getattr(torch, _n)
for _n, _t in (("float8e4m3", "float8_e4m3fn"), ("float8e5m2", "float8_e5m2")):
    if hasattr(torch, _t) and _n in _tensors.DL_CODES:
        _TORCH_DTYPES[_n] = getattr(torch, _t)
# torch dtype -> (DLPack code, bits)
DL_OF = {t: _tensors.DL_CODES[n] for n, t in _TORCH_DTYPES.items()}
TORCH_DTYPES = _TORCH_DTYPES

_structs = _tensors._SLOT_STRUCTS
_strided = torch.strided


class TorchKind(_tensors.Kind):
    name = "torch"

    def __init__(self, device: torch.device):
        self.device = device

    def empty(self, shape: tuple, dtype: str, like: Any) -> Any:
        t = _TORCH_DTYPES.get(dtype)
        if t is None:
            raise ArgumentError(f"torch has no {dtype}: pass the output with out=")
        return torch.empty(shape, dtype=t, device=self.device)


_CPU = TorchKind(torch.device("cpu"))
_CUDA: dict[int, TorchKind] = {}


def kind_for_device(index: int) -> TorchKind:
    k = _CUDA.get(index)
    if k is None:
        k = _CUDA[index] = TorchKind(torch.device("cuda", index))
    return k


def describe(x: torch.Tensor, slot: _tensors.Slot, write: bool, what: str):
    """Write x's DLTensor into slot: (address, keep-alive, kind, device type, id).

    The slot remembers what it last held (data pointer, dtype, shape,
    strides, device): a call on the same tensors (or on tensors that
    look the same) writes nothing. Those fields are the whole DLTensor,
    so a hit describes x exactly."""
    try:
        ptr = x.data_ptr()
        stride = x.stride()
    except RuntimeError:  # no storage or strides (sparse): the checks below say why
        ptr, stride = 0, None
    dtype = x.dtype
    shape = x.shape
    cuda = x.is_cuda
    last = slot.last
    # (a CUDA address names its GPU: one address space for all of them)
    if (ptr and last is not None and last[0] == ptr and last[1] is dtype and last[2] == shape
            and last[3] == stride and last[4] is cuda and (cuda or x.is_cpu) and not x.is_neg()):
        return slot.addr, x, last[5], last[7], last[6]
    if x.layout is not _strided:
        raise ArgumentError(f"{what}: only strided (dense) tensors are accepted, not {x.layout}")
    dl = DL_OF.get(dtype)
    if dl is None:  # complex dtypes too (so no lazily conjugated tensor gets here)
        raise ArgumentError(f"{what}: torch dtype {dtype} is not a tessel dtype")
    if x.is_cpu:
        dev_type, dev_id, kind = _tensors.kDLCPU, 0, _CPU
    elif cuda:
        dev_type, dev_id = _tensors.kDLCUDA, x.get_device()
        kind = kind_for_device(dev_id)
        if not write and not x.is_contiguous():
            # device tensors are used in place and must be dense: torch makes
            # one contiguous copy of a strided input, on the current stream
            # (not remembered: the copy is new each call)
            x = x.contiguous()
            ptr, stride = x.data_ptr(), x.stride()
            cuda = None
    else:
        raise ArgumentError(f"{what}: tensors on device '{x.device}' are not supported (cpu and cuda are)")
    if x.is_neg():
        raise ArgumentError(f"{what}: a lazily negated view; call .resolve_neg()")
    r = len(shape)
    if r > 8:
        raise ArgumentError(f"{what}: rank {r} is more than 8")
    addr = slot.addr
    _structs[r].pack_into(slot.buf, 0, ptr, dev_type, dev_id, r, dl[0], dl[1], 1,
                          addr + 48, addr + 112, 0, *shape, *stride)
    slot.last = (ptr, dtype, shape, stride, cuda, kind, dev_id, dev_type) if cuda is not None and ptr else None
    return addr, x, kind, dev_type, dev_id


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(device_index: int) -> int:
    """The raw CUstream torch would use now on that device."""
    if _raw_stream is not None:
        return _raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


class TorchAllocator:
    """A tsl_allocator over PyTorch's allocators: the CUDA caching allocator
    (stream-ordered, graph-capture aware) for GPU memory, torch.empty bytes
    for host memory. Exceptions become a NULL return (the C API then
    reports the allocation that failed)."""

    def __init__(self) -> None:
        from . import _lib
        self._host: dict = {}
        self._alloc_cb = _lib.ALLOC_FN(self._alloc)
        self._free_cb = _lib.FREE_FN(self._free)
        self.struct = _lib.Allocator(self._alloc_cb, self._free_cb, None)
        self.failures = 0

    def _alloc(self, user, device, nbytes, stream):
        try:
            if device.device_type == _tensors.kDLCUDA:
                return torch.cuda.caching_allocator_alloc(nbytes, device.device_id, stream or 0)
            t = torch.empty(nbytes, dtype=torch.uint8)
            self._host[t.data_ptr()] = t
            return t.data_ptr()
        except Exception:  # noqa: BLE001 (a C callback must not raise)
            self.failures += 1
            return None

    def _free(self, user, device, data, stream):
        try:
            if device.device_type == _tensors.kDLCUDA:
                torch.cuda.caching_allocator_delete(data)
            else:
                self._host.pop(data, None)
        except Exception:  # noqa: BLE001
            self.failures += 1


_ALLOCATOR = None


def allocator() -> TorchAllocator:
    global _ALLOCATOR
    if _ALLOCATOR is None:
        _ALLOCATOR = TorchAllocator()
    return _ALLOCATOR
