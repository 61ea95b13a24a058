"""ctypes declarations of libtessel.so's C API (include/tessel.h).

This module only finds the shared library and declares the functions the
package calls; everything user-facing is in the other modules. The library
is looked for, in order, at ``$TESSEL_LIB``, next to this file (an
installed package carries its own copy) and in the ``build/`` folder of
the source tree this file sits in (running from a checkout).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_uint8, c_uint16,
                    c_uint64, c_void_p, c_size_t)

__all__ = ["lib", "DLDevice", "DLDataType", "DLTensor", "ParamInfo", "Allocator", "DlpackCall", "library_path"]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    """DLPack's DLTensor (dlpack.h): 48 bytes on 64-bit Linux."""
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


ALLOC_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p, DLDevice, c_size_t, c_void_p)
FREE_FN = ctypes.CFUNCTYPE(None, c_void_p, DLDevice, c_void_p, c_void_p)


class Allocator(Structure):
    """tsl_allocator."""
    _fields_ = [("alloc", ALLOC_FN), ("free", FREE_FN), ("user", c_void_p)]


class DlpackCall(Structure):
    """tsl_dlpack_call: what tsl_program_call_dlpack reads at every call."""
    _fields_ = [("exchange_api", c_void_p), ("objects", c_void_p), ("n", c_int), ("filled", c_void_p),
                ("tensors", c_void_p), ("scalars", c_void_p), ("host_target", c_int), ("device_target", c_int),
                ("ready", DLDevice), ("unlock", c_void_p), ("relock", c_void_p), ("device", DLDevice),
                ("fill", c_int)]


class ParamInfo(Structure):
    """tsl_param_info."""
    _fields_ = [("name", c_char_p), ("is_scalar", c_int), ("is_output", c_int), ("dtype", c_int),
                ("rank", c_int)]


def _candidates() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    env = os.environ.get("TESSEL_LIB")
    if env:
        return [env]  # named explicitly: nothing else is tried
    paths.append(os.path.join(here, "libtessel.so"))
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "build", "libtessel.so")))
    return paths


def _load() -> tuple[ctypes.CDLL, str]:
    tried = []
    for p in _candidates():
        if os.path.isfile(p):
            try:
                return ctypes.CDLL(p), p
            except OSError as e:
                tried.append(f"{p}: {e}")
        else:
            tried.append(f"{p}: no such file")
    raise ImportError("tessel: cannot load libtessel.so (tried " + "; ".join(tried) +
                      "). Install the package with `python3 -m pip install ./python` from the "
                      "tessel checkout (it builds the library), or build it with `make "
                      "build/libtessel.so` and set TESSEL_LIB to its path.")


lib, library_path = _load()

_PROTOS = {
    # name: (restype, argtypes)
    "tsl_status_name": (c_char_p, [c_int]),
    "tsl_dtype_name": (c_char_p, [c_int]),
    "tsl_dtype_size": (c_size_t, [c_int]),
    "tsl_context_create": (c_void_p, []),
    "tsl_context_free": (None, [c_void_p]),
    "tsl_context_error": (c_char_p, [c_void_p]),
    "tsl_context_clear_error": (None, [c_void_p]),
    "tsl_check": (c_int, [c_void_p, c_char_p, c_char_p]),
    "tsl_program_compile": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(c_void_p)]),
    "tsl_program_compile_file": (c_int, [c_void_p, c_char_p, c_char_p, POINTER(c_void_p)]),
    "tsl_program_free": (None, [c_void_p]),
    "tsl_program_emit": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "tsl_program_name": (c_char_p, [c_void_p]),
    "tsl_program_param_count": (c_int, [c_void_p]),
    "tsl_program_param": (c_int, [c_void_p, c_int, POINTER(ParamInfo)]),
    "tsl_program_output_count": (c_int, [c_void_p]),
    "tsl_program_output_name": (c_char_p, [c_void_p, c_int]),
    "tsl_program_param_dims": (c_int, [c_void_p, c_int, POINTER(c_char_p)]),
    "tsl_args_create": (c_void_p, [c_void_p]),
    "tsl_args_free": (None, [c_void_p]),
    "tsl_args_set_scalar": (c_int, [c_void_p, c_char_p, c_double]),
    "tsl_args_bind": (c_int, [c_void_p, c_void_p, c_void_p]),
    "tsl_args_infer": (c_int, [c_void_p]),
    "tsl_args_output_shape": (c_int, [c_void_p, c_char_p, POINTER(c_int), POINTER(c_int64),
                                      POINTER(c_int)]),
    "tsl_program_run": (c_int, [c_void_p, c_void_p, c_int]),
    "tsl_program_call": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_int]),
    "tsl_target_default": (c_int, []),
    "tsl_target_name": (c_char_p, [c_int]),
    "tsl_layout_table": (c_int, [c_void_p, c_char_p, c_int, POINTER(c_void_p)]),
    "tsl_args_set_stream": (c_int, [c_void_p, c_void_p]),
    "tsl_args_set_allocator": (c_int, [c_void_p, c_void_p]),
    "tsl_args_set_sync": (c_int, [c_void_p, c_int]),
    "tsl_args_output": (c_void_p, [c_void_p, c_char_p]),
    "tsl_program_set_options": (c_int, [c_void_p, c_char_p]),
    "tsl_program_options": (c_char_p, [c_void_p]),
    "tsl_program_set_allow_tf32": (c_int, [c_void_p, c_int]),
    "tsl_options_space": (c_void_p, []),
    "tsl_program_tune": (c_int, [c_void_p, c_void_p, c_int, c_void_p, c_void_p]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# tsl_program_call for the call path, without argtypes (a separate
# function object): ctypes then passes the c_void_p handles and the arrays
# as they are, with no from_param conversion per argument (a ctypes call
# of five arguments: ~0.7 us instead of ~1.5 on the build machine)
lib.tsl_program_call_direct = lib["tsl_program_call"]
lib.tsl_program_call_direct.restype = c_int

# free() for the strings the library gives (TSL_GIVE char *)
_libc = ctypes.CDLL(None)
free = _libc.free
free.restype = None
free.argtypes = [c_void_p]


def take_string(p: c_void_p) -> str:
    """The malloc'd C string at p as str; frees it."""
    if not p.value:
        return ""
    try:
        return ctypes.string_at(p.value).decode("utf-8", "replace")
    finally:
        free(p)


MAX_RANK = 8
STATUS_NAMES = [lib.tsl_status_name(i).decode() for i in range(13)]
