"""`pip install ./python` in a fresh virtualenv: the in-tree build backend
builds (or finds up to date) build/libtessel.so, the wheel carries it, and
the installed package runs a function from outside the checkout. Offline
(--no-index): the venv sees this Python's NumPy (--system-site-packages)."""
import subprocess
import sys
import venv

import pytest

from pyhelpers import ROOT


def test_pip_install_in_fresh_venv(tmp_path):
    env_dir = tmp_path / "venv"
    try:
        venv.EnvBuilder(with_pip=True, system_site_packages=True).create(env_dir)
    except Exception as e:  # no ensurepip on this Python
        pytest.skip(f"cannot create a virtualenv with pip: {e}")
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(ROOT / "python")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import numpy as np, tessel\n"
            "assert tessel.library_path.startswith(%r), tessel.library_path\n"
            "f = tessel.compile('def f(float(N) A, float a) -> (B) { B(i) = A(i) * a }')\n"
            "x = np.random.rand(7).astype(np.float32)\n"
            "np.testing.assert_allclose(f(x, 3.0), x * 3, rtol=1e-6)\n"
            "print('installed ok')\n") % str(env_dir)
    r = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                            "TESSEL_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0 and "installed ok" in r.stdout, r.stdout + r.stderr
