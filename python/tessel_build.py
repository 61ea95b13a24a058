"""tessel_build — the PEP 517 build backend of the tessel Python package.

Standard library only, so ``pip install ./python`` works offline and in a
fresh virtualenv. ``build_wheel`` runs ``make build/libtessel.so`` in the
checkout this folder belongs to (or copies ``$TESSEL_LIB`` when that names
a library built elsewhere, e.g. on a machine without the build's headers),
then writes a wheel holding ``tessel/`` and that library. ``build_editable``
writes a wheel whose ``.pth`` points at this folder (the package then
loads ``../build/libtessel.so``). There is no sdist: the package is built
from a tessel checkout.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sysconfig
import zipfile

NAME = "tessel"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUMMARY = "Tensor Comprehensions compiled to C and CUDA, called on NumPy and PyTorch tensors"


def _tag() -> str:
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _metadata() -> str:
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            f"Requires-Python: >=3.9\nRequires-Dist: numpy\nProvides-Extra: torch\n"
            f"Requires-Dist: torch; extra == \"torch\"\n")


def _wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: tessel_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


def _library() -> str:
    """Path of a freshly built (or $TESSEL_LIB's) libtessel.so."""
    env = os.environ.get("TESSEL_LIB")
    if env:
        if not os.path.isfile(env):
            raise RuntimeError(f"tessel_build: TESSEL_LIB={env} is not a file")
        return env
    if not os.path.isfile(os.path.join(ROOT, "Makefile")) or not os.path.isdir(os.path.join(ROOT, "src")):
        raise RuntimeError(f"tessel_build: {ROOT} is not a tessel checkout; build the package from "
                           "one (`python3 -m pip install ./python` in the checkout)")
    jobs = str(os.cpu_count() or 2)
    cmd = ["make", "-s", "-C", ROOT, f"-j{jobs}", "build/libtessel.so"]
    print("tessel_build: " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode:
        raise RuntimeError("tessel_build: building libtessel.so failed (the build needs a C compiler, "
                           "make and libdlpack-dev: `bash scripts/setup.sh` installs them)")
    return os.path.join(ROOT, "build", "libtessel.so")


def _record_line(arc: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: dict) -> str:
    dist = f"{NAME}-{VERSION}.dist-info"
    files = dict(files)
    files[f"{dist}/METADATA"] = _metadata().encode()
    files[f"{dist}/WHEEL"] = _wheel_file().encode()
    files[f"{dist}/top_level.txt"] = f"{NAME}\n".encode()
    record = [_record_line(arc, data) for arc, data in files.items()]
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{NAME}-{VERSION}-{_tag()}.whl"
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files.items():
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arc.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _package_files() -> dict:
    files = {}
    pkg = os.path.join(HERE, NAME)
    for fn in sorted(os.listdir(pkg)):
        if fn.endswith(".py") or fn == "py.typed":
            with open(os.path.join(pkg, fn), "rb") as f:
                files[f"{NAME}/{fn}"] = f.read()
    return files


# ---- PEP 517 hooks -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = f"{NAME}-{VERSION}.dist-info"
    d = os.path.join(metadata_directory, dist)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = _package_files()
    with open(_library(), "rb") as f:
        files[f"{NAME}/libtessel.so"] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _library()
    return _write_wheel(wheel_directory, {f"_{NAME}_editable.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("tessel_build: no sdist; install from a tessel checkout with "
                       "`python3 -m pip install ./python`")
