"""The fast call of a compiled def: a ``__call__`` generated per Function.

The generic ``Function.__call__`` binds arguments with loops over the
def's parameters and describes each tensor with a foreign call (about
1 us each). For the common cases — every tensor argument a NumPy array,
or every one a torch tensor, passed by position, outputs allocated or
given as one ``out=`` — this module writes Python source specialised to
the def (which parameters are scalars, in/out, how many outputs) and
compiles it once per Function:

- NumPy: each array's DLPack capsule is made (``__dlpack__``, no copy)
  and all of them reach C in one call, ``tsl_program_call_refs``, as a
  tuple whose item array C reads (each capsule's pointer at CAPSULE_AT).
- torch: one C call, ``tsl_program_call_dlpack``, describes all the
  call's tensors through torch's DLPack exchange API
  (``__dlpack_c_exchange_api__``, torch >= 2.10), reading them from a list
  kept per thread whose item array stays put, and runs on them; it is
  entered with the GIL held (the fill calls into torch) and lets go of it
  for the run (PyEval_SaveThread/PyEval_RestoreThread, passed as hooks).
  On CUDA it takes torch's current stream through the same API.

Every argument of the C calls that does not change from call to call is
made once, as the object ctypes passes as it is (``byref``,
``from_param``; the torch call's in one tsl_dlpack_call): ctypes wraps a
c_void_p or an array in a new parameter object on every call, and only
the NumPy capsules' tuple is new per call.

Anything else (keywords, size symbols, other types, read-only arrays,
negated torch views, the first call at new shapes, CUDA tensors that
must be copied) goes to the generic path, which also gives every error
its full message. The CPython layouts relied on (a tuple's item array, a
capsule's pointer field) are checked at import against id() and
PyCapsule_GetPointer (a list's item array against id()); where one does
not hold there is no fast call.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable

from . import _lib

_L = _lib.lib
_REF_NONE, _REF_MANAGED = 0, 2  # tsl_ref_kind
_DLPACK_UNUSABLE, _DLPACK_SETUP = 2, 3  # tsl_dlpack_call.fill (tessel.h)
_DL = 48  # sizeof(DLTensor)
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _layouts() -> tuple:
    """(offset of a tuple's item array, offset of a capsule's pointer,
    offset of a list's item-array pointer) in this interpreter's objects,
    checked; Nones where they do not hold (another Python implementation,
    a debug build)."""
    try:
        import numpy as np
        x = np.zeros(3, np.float32)
        cap = x.__dlpack__()
        t = (cap, x)
        word = ctypes.sizeof(ctypes.c_void_p)
        items = 3 * word  # refcount, type, size, then the items
        if (ctypes.c_void_p.from_address(id(t) + items).value != id(cap) or
                ctypes.c_void_p.from_address(id(t) + items + word).value != id(x)):
            return None, None, None
        at = 2 * word  # refcount, type, then the pointer
        if ctypes.c_void_p.from_address(id(cap) + at).value != _get_pointer(cap, b"dltensor"):
            return None, None, None
        lst = [cap, x]
        item = 3 * word  # refcount, type, size, then the pointer to the items
        arr = ctypes.c_void_p.from_address(id(lst) + item).value
        if (not arr or ctypes.c_void_p.from_address(arr).value != id(cap) or
                ctypes.c_void_p.from_address(arr + word).value != id(x)):
            return items, at, None
        lst[0] = x  # stored in place: the item array stays where it was
        if ctypes.c_void_p.from_address(id(lst) + item).value != arr or \
                ctypes.c_void_p.from_address(arr).value != id(x):
            return items, at, None
        return items, at, item
    except Exception:  # noqa: BLE001 (then no fast path, nothing worse)
        return None, None, None


TUPLE_ITEMS, CAPSULE_AT, LIST_ITEMS = _layouts()
AVAILABLE = (TUPLE_ITEMS is not None and LIST_ITEMS is not None and
             hasattr(_L, "tsl_program_call_refs") and hasattr(_L, "tsl_program_call_dlpack"))

if AVAILABLE:
    # no argtypes: every argument is passed as a ready ctypes object
    _call = _L["tsl_program_call_refs"]
    _call.restype = ctypes.c_int
    # with the GIL held: the exchange API calls into torch, and a Python
    # exception it sets is raised here by ctypes; the call lets go of the
    # GIL for the run itself through these two
    _call_dl = ctypes.PyDLL(_lib.library_path)["tsl_program_call_dlpack"]
    _call_dl.restype = ctypes.c_int
    _UNLOCK = ctypes.cast(ctypes.pythonapi.PyEval_SaveThread, ctypes.c_void_p).value
    _RELOCK = ctypes.cast(ctypes.pythonapi.PyEval_RestoreThread, ctypes.c_void_p).value
# ctypes passes a CArgObject (what byref and from_param give) as it is;
# a c_void_p or an array it wraps in a new one on every call
_AT = ctypes.c_size_t.from_param(CAPSULE_AT or 0)


def _arg(p: int) -> Any:
    """The pointer p as a ready ctypes argument."""
    return ctypes.c_void_p.from_param(p)


class FastState:
    """One thread's scratch for the fast calls of one Function, and the
    arguments its C calls pass, made once as ready ctypes arguments (the
    ``p_`` slots: read as slots, not through attributes of attributes)."""
    __slots__ = ("owner", "scalars", "refs", "dl", "tref", "kinds_np", "objl", "call",
                 "p_prog", "p_args", "p_scalars", "p_kinds_np", "p_call")

    def __init__(self, f: Any, a: Any) -> None:
        n, nslots = f._nparams, f._nslots
        self.owner = a  # the _Args whose C args and scalars these are: kept alive
        self.scalars = a.scalars
        self.refs = ctypes.c_void_p()  # per call: where a tuple's items are
        self.kinds_np = (ctypes.c_uint8 * max(nslots, 1))()
        self.dl = ctypes.create_string_buffer(_DL * max(nslots, 1))  # the DLTensors torch fills
        self.tref = (ctypes.c_void_p * max(nslots, 1))()  # slot -> its filled DLTensor
        k = 0
        for i in range(nslots):
            none = f._scalar[i] if i < n else f._inout_param[i - n] >= 0
            self.kinds_np[i] = _REF_NONE if none else _REF_MANAGED
            if not none:
                self.tref[i] = ctypes.addressof(self.dl) + _DL * k
                k += 1
        # the torch tensors of a call, stored in place for
        # tsl_program_call_dlpack (which reads the list's item array: never
        # resized, it stays where it is) and cleared after it
        self.objl = [None] * max(k, 1)
        c = self.call = _lib.DlpackCall()
        torch_ready()  # torch imported since the calls' globals were made: its API now
        c.exchange_api = _G.get("_API_PTR")  # None while torch is not imported: refused (UNUSABLE)
        c.objects = ctypes.c_void_p.from_address(id(self.objl) + LIST_ITEMS).value
        c.n = k
        c.filled = ctypes.addressof(self.dl)
        c.tensors = ctypes.addressof(self.tref)
        c.scalars = ctypes.addressof(a.scalars)
        c.host_target = f._target_code if f._target_code >= 0 else 1
        c.device_target = f._target_code if f._target_code >= 0 else 2
        c.unlock, c.relock = _UNLOCK, _RELOCK
        self.p_prog = _arg(f._prog.ptr)
        self.p_args = _arg(a.ptr)
        self.p_scalars = ctypes.byref(a.scalars)
        self.p_kinds_np = ctypes.byref(self.kinds_np)
        self.p_call = ctypes.byref(c)

    def set_up(self, f: Any) -> None:
        """After tsl_program_call_dlpack answered TSL_DLPACK_SETUP (CUDA
        tensors on a GPU these args are not set up for): set them up as the
        generic call does (torch's allocator), so that the same C call can
        be made again at once. What the setup raises, the generated call
        hands to the generic call, which makes the same setup and raises it
        from there."""
        c = self.call
        d = c.device.device_id
        f._cuda_setup(self.owner, _kind_for_device(d), d)
        c.ready.device_type, c.ready.device_id = c.device.device_type, d

    def not_run(self) -> None:
        """After tsl_program_call_dlpack ran nothing (the call goes
        generic): use torch's exchange API from now on if these were made
        before torch was met. Raises nothing."""
        c = self.call
        if c.fill == _DLPACK_UNUSABLE and not c.exchange_api:
            c.exchange_api = _G.get("_API_PTR")


class _NoType:
    """Stands for torch.Tensor until torch is met: no object has this type."""


def torch_ready() -> None:
    """Use torch's exchange API from now on, if this torch has one."""
    torch = sys.modules.get("torch")
    if torch is None or not _G or _G["_Tensor"] is not _NoType:
        return
    try:
        cap = torch.Tensor.__dlpack_c_exchange_api__
        ptr = cap if isinstance(cap, int) else _get_pointer(cap, b"dlpack_exchange_api")
    except (AttributeError, ValueError, TypeError):
        return  # an older torch: the generic path describes its tensors
    from . import _torch_kind
    _G.update({"_API_PTR": ptr, "_torch_empty": torch.empty, "_TORCH_DTYPES": _torch_kind.TORCH_DTYPES,
               "_Tensor": torch.Tensor})


def make_call(f: Any, general: Callable) -> Callable:
    """The __call__ of Function f: the fast paths above, else general."""
    n = f._nparams
    outs = f.outputs
    x = [f"x{i}" for i in range(n)]
    tens = [i for i in range(n) if not f._scalar[i]]
    if not tens:  # nothing to describe: the generic path

        def __call__(self, *args, out=None, **kw):
            return general(self, args, out, kw)
        return __call__
    scal = [i for i in range(n) if f._scalar[i]]
    alloc = [j for j in range(len(outs)) if f._inout_param[j] < 0]
    single = len(outs) == 1 and alloc == [0]
    src = [f"def __call__(self, *args, out=None, **kw):",
           f"    if kw or len(args) != {n}:",
           f"        return general(self, args, out, kw)"]
    if n:
        src.append(f"    {', '.join(x)}{',' if n == 1 else ''} = args")
    src += ["    try:",
            "        fs = self._local.fast",
            "    except AttributeError:",
            "        fs = self._fast_state()"]
    if scal:
        src += ["    sc = fs.scalars", "    try:"]
        src += [f"        sc[{i}] = {x[i]}" for i in scal]
        src += ["    except TypeError:", "        return general(self, args, out, kw)"]
    key = "(" + "".join(f"{x[i]}.shape, " for i in tens) + ")"

    def outputs(empty: str) -> list:
        """Source binding every allocated output o<j> (or going general)."""
        s = []
        if alloc:
            s += ["        if out is None:",
                  f"            plan = self._shapes.get({key})",
                  "            if plan is None:",
                  "                return general(self, args, out, kw)"]
            s += ["            try:"]
            for k, j in enumerate(alloc):
                s += [f"                o{j} = {empty.format(k=k)}"]
            s += ["            except KeyError:  # a dtype this kind of tensor lacks: the generic path says so",
                  "                return general(self, args, out, kw)"]
            if single:
                s += [f"        elif type(out) is {{T}}{{OUT_OK}}:", "            o0 = out"]
            s += ["        else:", "            return general(self, args, out, kw)"]
        else:
            s += ["        if out is not None:", "            return general(self, args, out, kw)"]
        return s

    res = [f"o{j}" if f._inout_param[j] < 0 else x[f._inout_param[j]] for j in range(len(outs))]
    ret = f"        return {res[0]}" if len(res) == 1 else f"        return ({', '.join(res)},)"
    target = f._target_code if f._target_code >= 0 else 1
    # NumPy arrays
    src += [f"    if {' and '.join(f'type({x[i]}) is _ndarray' for i in tens)}:"]
    src += [l.replace("{T}", "_ndarray").replace("{OUT_OK}", "")
            for l in outputs("_np_empty(plan[{k}][1], _NP_DTYPES[plan[{k}][2]])")]
    caps = []
    for i in range(f._nslots):
        if i < n:
            caps.append("None" if f._scalar[i] else f"{x[i]}.__dlpack__()")
        else:
            j = i - n
            caps.append("None" if f._inout_param[j] >= 0 else f"o{j}.__dlpack__()")
    src += ["        try:",
            f"            refs = ({', '.join(caps)},)",
            "        except (BufferError, TypeError, KeyError):",
            "            return general(self, args, out, kw)",
            "        fs.refs.value = id(refs) + _ITEMS",
            f"        st = _call(fs.p_prog, fs.p_args, fs.refs, fs.p_kinds_np, _AT, fs.p_scalars, {target})",
            "        if st:",
            "            raise self._ctx.error(st)",
            ret]
    # torch tensors
    src += [f"    if {' and '.join(f'type({x[i]}) is _Tensor and not {x[i]}.is_neg()' for i in tens)}:"]
    src += [l.replace("{T}", "_Tensor").replace("{OUT_OK}", " and not out.is_neg()")
            for l in outputs("_torch_empty(plan[{k}][1], dtype=_TORCH_DTYPES[plan[{k}][2]], "
                             f"device={x[tens[0]]}.device)")]
    objs = [x[i] for i in tens] + [f"o{j}" for j in alloc]
    src += ["        ol = fs.objl"]
    src += [f"        ol[{k}] = {o}" for k, o in enumerate(objs)]
    src += ["        try:",
            "            st = _call_dl(fs.p_prog, fs.p_args, fs.p_call, self.sync)",
            # the first call of these args on a GPU: set up, then call again
            "            if st == _ERR_ARG and fs.call.fill == _SETUP:",
            "                fs.set_up(self)",
            "                st = _call_dl(fs.p_prog, fs.p_args, fs.p_call, self.sync)",
            "        except Exception:  # torch refused a tensor, or the setup failed: the generic path raises it",
            "            st = _ERR_ARG",
            # the list let go at once: the filled DLTensors borrow from tensors the locals hold
            f"        {' = '.join(f'ol[{k}]' for k in range(len(objs)))} = None",
            "        if st:",
            "            if st == _ERR_ARG:  # refused before anything ran: the generic path says it in torch's terms",
            "                fs.not_run()",
            "                return general(self, args, out, kw)",
            "            raise self._ctx.error(st)",
            ret,
            "    return general(self, args, out, kw)"]
    code = compile("\n".join(src), f"<tessel fast call of {f.name}>", "exec")
    ns: dict = {}
    exec(code, _globals(general), ns)  # noqa: S102 (our own generated source)
    fn = ns["__call__"]
    fn.__tessel_source__ = "\n".join(src)
    return fn


_G: dict = {}  # the generated calls' globals, one dict for all (torch_ready adds torch's)


def _globals(general: Callable) -> dict:
    if not _G:
        import numpy as np
        from . import _tensors
        _G.update({"general": general, "_ndarray": np.ndarray, "_np_empty": np.empty,
                   "_NP_DTYPES": _tensors.NUMPY_DTYPES, "_call": _call, "_call_dl": _call_dl, "_AT": _AT,
                   "_ITEMS": TUPLE_ITEMS, "_ERR_ARG": _lib.STATUS_NAMES.index("TSL_ERR_ARG"), "_Tensor": _NoType,
                   "_SETUP": _DLPACK_SETUP,
                   "_API_PTR": None, "_torch_empty": None, "_TORCH_DTYPES": {}})
        torch_ready()
    return _G


def _kind_for_device(index: int) -> Any:
    from . import _torch_kind
    return _torch_kind.kind_for_device(index)
