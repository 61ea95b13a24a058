"""The CLI and the library under AddressSanitizer + UBSan (build-asan/tessel,
built by `make asan`): every example def once, and the error paths, must
run with no sanitizer report and no leak (a leak turns the exit code into
LeakSanitizer's). Skipped when the ASan build is absent."""
import os

import numpy as np
import pytest

from conftest import ROOT, run_cli, run_tc
from test_examples import SPECS, compare, d

ASAN_TESSEL = ROOT / "build-asan" / "tessel"
ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}

pytestmark = pytest.mark.skipif(not ASAN_TESSEL.exists(), reason="no build-asan/tessel")


def clean(proc):
    text = proc.stderr
    assert "Sanitizer" not in text and "runtime error:" not in text, text


@pytest.mark.parametrize("key", list(SPECS), ids=lambda k: k[1])
def test_example_under_asan(tmp_path, rng, key):
    file, entry = key
    spec = SPECS[key]
    inputs = spec["make"](rng, spec["shapes"][-1])
    sets = spec["scalars"](rng) if "scalars" in spec else {}
    want = spec["ref"]({**{k: d(v) for k, v in inputs.items()}, **sets})
    res = run_tc(tmp_path, f"examples/{file}", inputs=inputs, sets=sets, outputs=list(want),
                 entry=entry, binary=ASAN_TESSEL, env=ENV, extra=["--check"])
    clean(res.proc)
    for name, ref in want.items():
        compare(name, res.outputs[name], ref, inputs)


@pytest.mark.parametrize("args,rc", [
    (["run"], 2),
    (["run", "examples/matmul.tc", "--input", "A"], 2),
    (["run", "examples/tmm.tc"], 1),
    (["run", "examples/matmul.tc", "--size", "M=3"], 1),
    (["run", "examples/matmul.tc", "--size", "M=3", "--size", "K=0", "--size", "N=5"], None),
    (["run", "examples/sgemm.tc", "--size", "N=3", "--size", "M=5", "--size", "K=7"], 1),
    # random gather indices are drawn in range (the index error, with a bad
    # index given, is in test_bad_inputs_under_asan)
    (["run", "examples/gather.tc", "--size", "N=3", "--size", "A=5", "--size", "B=7"], 0),
    (["run", "examples/matmul.tc", "--size", "M=3", "--size", "K=5", "--size", "N=7",
      "--target", "cuda"], None),
    (["check", "no/such/file.tc"], 1),
    (["check", "examples/lut2.tc"], 0),
    (["run", "examples/attention.tc", "--size", "B=1", "--size", "Tq=3", "--size", "Tk=5",
      "--size", "D=7", "--size", "E=1", "--print", "--seed", "7"], 0),
    (["compile", "examples/tmm.tc", "--emit=ranges"], 0),
    (["compile", "examples/lstm.tc", "--emit=ast"], 0),
], ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_paths_under_asan(args, rc):
    proc = run_cli(*args, binary=ASAN_TESSEL, env=ENV)
    clean(proc)
    if rc is None:
        assert proc.returncode in (0, 1), proc.stderr
    else:
        assert proc.returncode == rc, proc.stderr


def test_bad_inputs_under_asan(tmp_path, rng):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00\xff\xff{'descr'")
    proc = run_cli("run", "examples/mv.tc", "--entry", "mv", "--input", f"A={bad}", "--size", "K=3",
                   binary=ASAN_TESSEL, env=ENV)
    clean(proc)
    assert proc.returncode == 1
    idx = np.array([[0, 5, 99]], dtype=np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": rng.random(7, np.float32), "I": idx},
                 binary=ASAN_TESSEL, env=ENV, expect_ok=False)
    clean(res.proc)
    assert res.proc.returncode == 1 and "99" in res.proc.stderr
    prog = tmp_path / "bad.tc"
    prog.write_text("def f(float(N) A) -> (B) {\n  B(i) = A(i) * Q(i\n}\n")
    proc = run_cli("check", prog, binary=ASAN_TESSEL, env=ENV)
    clean(proc)
    assert proc.returncode == 1
