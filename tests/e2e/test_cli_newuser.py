"""The command line as a new user meets it: the help lists every command,
--version says what was found, a bad TESSEL_NUM_THREADS is refused, a
division by zero on the CPU names the source line, --emit=c prints one
kernel on request, and run --verbose says where the time went and whether
the kernels came from the cache."""
import os
import re

import pytest

from conftest import run_cli

PROG = ("def dz(int32(N) A, int32(N) B) -> (C) {\n  C(i) = A(i) / (B(i) - B(i))\n}\n"
        "def nrm(float(N,M) X) -> (R) {\n  Q() +=! X(i,j) * X(i,j)\n  R() = sqrt(Q())\n}\n")


def write(tmp_path, text, name="p.tc"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_help_lists_every_command():
    r = run_cli("--help")
    assert r.returncode == 0
    for want in ("check FILE.tc", "run FILE.tc", "--emit=KIND", "--kernel", "tile check|print|expand",
                 "tile emit|select", "tile run", "--version", "TESSEL_NUM_THREADS"):
        assert want in r.stdout, (want, r.stdout)


def test_version_says_what_it_found():
    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert re.match(r"tessel \d+\.\d+\.\d+ \(commit \w+\)", r.stdout), r.stdout
    for want in ("C compiler (cpu target): ", "NVRTC: ", "CUDA driver"):
        assert want in r.stdout, (want, r.stdout)


def test_bad_thread_count_is_refused(tmp_path):
    prog = write(tmp_path, PROG)
    env = dict(os.environ, TESSEL_NUM_THREADS="abc")
    r = run_cli("run", prog, "--entry", "nrm", "--size", "N=3", "--size", "M=5", "--target", "cpu", env=env)
    assert r.returncode == 1
    assert "TESSEL_NUM_THREADS='abc' is not a positive integer" in r.stderr, r.stderr


def test_cpu_division_by_zero_names_the_source_line(tmp_path):
    prog = write(tmp_path, PROG)
    r = run_cli("run", prog, "--entry", "dz", "--size", "N=5", "--target", "cpu")
    assert r.returncode == 1
    assert f"{prog}:2:10: error: integer division by zero" in r.stderr, r.stderr
    assert "C(i) = A(i) / (B(i) - B(i))" in r.stderr and "kernel '" not in r.stderr, r.stderr


def test_emit_one_kernel(tmp_path):
    prog = write(tmp_path, PROG)
    r = run_cli("compile", prog, "--entry", "nrm", "--emit=c")
    assert r.returncode == 0
    kernels = re.findall(r"from tile kernel '(\w+)'", r.stdout)
    assert len(kernels) >= 2, r.stdout[:300]
    assert "--kernel NAME prints one" in r.stderr and kernels[0] in r.stderr, r.stderr
    r1 = run_cli("compile", prog, "--emit=c", "--kernel", kernels[1])
    assert r1.returncode == 0, r1.stderr
    assert re.findall(r"from tile kernel '(\w+)'", r1.stdout) == [kernels[1]]
    r2 = run_cli("compile", prog, "--entry", "nrm", "--emit=c", "--kernel", "nope")
    assert r2.returncode == 1 and "has no kernel named nope (its kernels: " in r2.stderr, r2.stderr
    r3 = run_cli("compile", prog, "--emit=cuda", "--kernel", kernels[0])
    assert r3.returncode == 0 and "__global__" in r3.stdout, r3.stderr


def test_verbose_timings_and_cache(tmp_path):
    prog = write(tmp_path, PROG)
    env = dict(os.environ, TESSEL_CACHE_DIR=str(tmp_path / "cache"))
    args = ("run", prog, "--entry", "nrm", "--size", "N=7", "--size", "M=5", "--target", "cpu", "--verbose")
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    m = re.search(r"time: ([\d.]+) ms = plan ([\d.]+) \+ generate ([\d.]+) \+ compile ([\d.]+) \+ load ([\d.]+)"
                  r" \+ run ([\d.]+)", first.stdout)
    assert m, first.stdout
    assert float(m.group(4)) > 0, first.stdout
    k = re.search(r"kernels: (\d+); (\d+) compiled now, (\d+) from the kernel cache, (\d+) already loaded",
                  first.stdout)
    assert k and int(k.group(2)) == int(k.group(1)) > 0, first.stdout
    again = run_cli(*args, env=env)  # a new process: every kernel from the on-disk cache
    k2 = re.search(r"(\d+) compiled now, (\d+) from the kernel cache", again.stdout)
    assert k2 and int(k2.group(1)) == 0 and int(k2.group(2)) == int(k.group(1)), again.stdout


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_random_gather_indices_stay_in_range(tmp_path, target):
    """An embedding bag and a two-sided shift run on random inputs alone:
    the integer tensors read as gather indices get values that keep every
    such read in range (before: random in [-8, 8), an index error)."""
    prog = write(tmp_path, "def bag(float(V,D) E, int64(B,L) idx) -> (y) {\n  y(b,d) +=! E(idx(b,l),d)\n}\n"
                           "def shift(float(N) X, int32(M) I) -> (Y) {\n  Y(m) = X(I(m) + 2) + X(I(m) - 1)\n}\n")
    for entry, sizes in (("bag", ["V=11", "D=5", "B=3", "L=4"]), ("bag", ["V=1", "D=2", "B=1", "L=7"]),
                         ("shift", ["N=6", "M=9"]), ("shift", ["N=4", "M=1"])):
        args = ["run", prog, "--entry", entry, "--target", target] + [a for z in sizes for a in ("--size", z)]
        r = run_cli(*args, *(["--check"] if target != "interp" else []))
        assert r.returncode == 0 and "FAILED" not in r.stdout, (entry, sizes, r.stdout, r.stderr)


def test_random_index_input_gets_a_note(tmp_path):
    """A gather the CLI cannot bound (the index scaled: `E(2 * idx(b,l), d)`)
    on random inputs: the error says which inputs were random and how to
    give them, and a run with real indices matches NumPy."""
    import numpy as np
    from conftest import run_tc
    prog = write(tmp_path, "def bag(float(V,D) E, int64(B,L) idx) -> (y) {\n  y(b,d) +=! E(2 * idx(b,l),d)\n}\n")
    r = run_cli("run", prog, "--size", "V=11", "--size", "D=5", "--size", "B=3", "--size", "L=4",
                "--seed", "1", "--target", "cpu")
    assert r.returncode == 1 and "out of range for dimension 0 of 'E' (size 11)" in r.stderr, r.stderr
    assert "note: random integer input idx (values in [-8, 8)" in r.stderr, r.stderr
    assert "--input NAME=PATH.npy" in r.stderr, r.stderr
    rng = np.random.default_rng()
    E = rng.standard_normal((11, 5)).astype(np.float32)
    idx = rng.integers(0, 6, (3, 4)).astype(np.int64)
    ok = run_tc(tmp_path, prog, inputs={"E": E, "idx": idx}, outputs=["y"], extra=["--target", "cpu", "--check"])
    np.testing.assert_allclose(ok.outputs["y"], E[2 * idx].sum(axis=1), rtol=1e-5, atol=1e-6)
    assert "note:" not in ok.proc.stderr
