"""The `tessel` command's contract: exit codes, messages, options."""
import os
import re

import numpy as np
import pytest

from conftest import EXAMPLES, run_cli, run_tc


def f32(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- check -------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.tc")), ids=lambda p: p.name)
def test_check_examples(path):
    proc = run_cli("check", path)
    assert proc.returncode == 0, proc.stderr


BAD_PROGRAMS = {
    # a syntax error: the expression ends early
    "syntax": ("def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}\n", (2, 3)),
    # a tensor that is neither a parameter nor defined
    "undefined": ("def f(float(N) A) -> (B) {\n  B(i) = A(i) * Q(i)\n}\n", (2,)),
    # an in-place transpose breaks the read-before-write semantics
    "inplace": ("def f(float(N,N) A) -> (A) {\n  A(i,j) = A(j,i)\n}\n", (2,)),
    # maxpool without its where clause: kh cannot be inferred
    "underconstrained": ("def f(float(H) X) -> (Y) {\n  Y(i) max=! X(2*i + kh)\n}\n", (2,)),
}


@pytest.mark.parametrize("kind", sorted(BAD_PROGRAMS))
def test_check_bad_program(tmp_path, kind):
    text, lines_ok = BAD_PROGRAMS[kind]
    path = write(tmp_path, "bad.tc", text)
    proc = run_cli("check", path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    m = re.search(r"bad\.tc:(\d+):(\d+): error: .+", proc.stderr)
    assert m, proc.stderr
    assert int(m.group(1)) in lines_ok, proc.stderr
    # the source line, then a caret under the column
    lines = proc.stderr.splitlines()
    caret = [i for i, s in enumerate(lines) if s.strip() == "^"]
    assert caret, proc.stderr
    col = int(m.group(2))
    assert lines[caret[0]].index("^") >= col - 1, proc.stderr


def test_check_unreadable_file(tmp_path):
    missing = tmp_path / "nope.tc"
    proc = run_cli("check", missing)
    assert proc.returncode == 1
    assert "nope.tc" in proc.stderr


def test_run_unreadable_file(tmp_path):
    proc = run_cli("run", tmp_path / "nope.tc")
    assert proc.returncode == 1
    assert "nope.tc" in proc.stderr


# ---- usage errors exit 2 -----------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["check"],
    ["run"],
    ["run", "examples/matmul.tc", "--bogus"],
    ["run", "examples/matmul.tc", "--input", "A"],
    ["run", "examples/matmul.tc", "--input", "=x.npy"],
    ["run", "examples/matmul.tc", "--size", "M"],
    ["run", "examples/matmul.tc", "--set", "alpha"],
    ["run", "examples/matmul.tc", "--output"],
    ["run", "examples/matmul.tc", "--target", "gpu"],
    ["run", "examples/matmul.tc", "--seed", "x"],
    ["run", "examples/matmul.tc", "extra.tc"],
    ["compile", "examples/matmul.tc"],
    ["compile", "examples/matmul.tc", "--emit=bytecode"],
], ids=lambda a: " ".join(a) or "none")
def test_usage_errors_exit_2(args):
    proc = run_cli(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "usage" in proc.stderr.lower()


@pytest.mark.parametrize("cmd", ["check", "run", "compile"])
def test_help(cmd):
    proc = run_cli(cmd, "--help")
    assert proc.returncode == 0
    assert "usage: tessel " + cmd in proc.stdout


# ---- run: random inputs, sizes ---------------------------------------------------

def test_run_random_inputs_summary():
    proc = run_cli("run", "examples/matmul.tc", "--size", "M=3", "--size", "K=5", "--size", "N=7")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert re.fullmatch(r"matmul: A\(3,5\) float32, B\(5,7\) float32 -> C\(3,7\) float32 "
                        r"on (interp|cpu|cuda) in \d+\.\d{3} ms", first), first
    second = proc.stdout.splitlines()[1]
    assert "C(3,7)" in second and "min" in second and "max" in second and "mean" in second


def test_run_seed_reproducible(tmp_path):
    outs = []
    for i, seed in enumerate(["11", "11", "12"]):
        path = tmp_path / f"c{i}.npy"
        proc = run_cli("run", "examples/matmul.tc", "--size", "M=5", "--size", "K=3", "--size",
                       "N=7", "--seed", seed, "--output", f"C={path}")
        assert proc.returncode == 0, proc.stderr
        outs.append(np.load(path))
    assert np.array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])


def test_run_random_inputs_are_fresh_and_in_range(tmp_path):
    # mv with K=1 and x... we read back C = A x; two runs must differ and stay
    # within |C| <= K (|A|,|x| < 1)
    outs = []
    for i in range(2):
        path = tmp_path / f"c{i}.npy"
        proc = run_cli("run", "examples/mv.tc", "--entry", "mv", "--size", "M=101", "--size", "K=3",
                       "--output", f"C={path}")
        assert proc.returncode == 0, proc.stderr
        outs.append(np.load(path))
    assert not np.array_equal(outs[0], outs[1])
    assert np.all(np.abs(outs[0]) <= 3.0) and np.abs(outs[0]).max() > 0


def test_missing_size_names_symbol():
    proc = run_cli("run", "examples/matmul.tc", "--size", "M=3", "--size", "K=5")
    assert proc.returncode == 1
    assert "N" in proc.stderr and "--size N=" in proc.stderr and "B" in proc.stderr


def test_size_from_given_input(tmp_path, rng):
    # K and N come from B; M from --size
    b = f32(rng, 5, 7)
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"B": b}, sizes={"M": 3},
                 outputs=["C"])
    assert res.outputs["C"].shape == (3, 7)


def test_mismatched_input_sizes_name_both(tmp_path, rng):
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": f32(rng, 3, 5), "B": f32(rng, 7, 2)},
                 outputs=["C"], expect_ok=False)
    assert res.proc.returncode == 1
    err = res.proc.stderr
    assert "A" in err and "B" in err and "K" in err, err


def test_wrong_rank_input(tmp_path, rng):
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": f32(rng, 3, 5, 1)},
                 sizes={"N": 3}, expect_ok=False)
    assert res.proc.returncode == 1
    assert "A" in res.proc.stderr


def test_unknown_input_name(tmp_path, rng):
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"Q": f32(rng, 3)}, expect_ok=False)
    assert res.proc.returncode == 1
    assert "Q" in res.proc.stderr


def test_gather_out_of_range(tmp_path, rng):
    idx = rng.integers(0, 7, size=(3, 5), dtype=np.int64)
    idx[1, 2] = 9
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": f32(rng, 7), "I": idx},
                 outputs=["Z"], expect_ok=False)
    assert res.proc.returncode == 1
    err = res.proc.stderr
    assert "X" in err and "9" in err and "7" in err, err


def test_gather_negative_index(tmp_path, rng):
    idx = rng.integers(0, 7, size=(3, 5), dtype=np.int64)
    idx[2, 4] = -1
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": f32(rng, 7), "I": idx},
                 expect_ok=False)
    assert res.proc.returncode == 1
    assert "X" in res.proc.stderr and "-1" in res.proc.stderr


def test_missing_npy(tmp_path):
    path = tmp_path / "missing.npy"
    proc = run_cli("run", "examples/mv.tc", "--entry", "mv", "--input", f"A={path}", "--size", "K=3")
    assert proc.returncode == 1
    assert "missing.npy" in proc.stderr


def corrupt_npy(kind):
    """Bytes of a broken .npy file."""
    import io
    buf = io.BytesIO()
    np.save(buf, np.ones((3, 5), np.float32))
    good = buf.getvalue()
    return {
        "empty": b"",
        "garbage": b"not a numpy file at all, just text",
        "truncated-header": good[:30],
        "truncated-data": good[:-7],
        "bad-descr": good.replace(b"'<f4'", b"'<X9'"),
        "bad-shape": good.replace(b"(3, 5)", b"(3, q)"),
    }[kind]


@pytest.mark.parametrize("kind", ["empty", "garbage", "truncated-header", "truncated-data",
                                  "bad-descr", "bad-shape"])
def test_corrupt_npy(tmp_path, kind):
    path = tmp_path / "bad.npy"
    path.write_bytes(corrupt_npy(kind))
    proc = run_cli("run", "examples/mv.tc", "--entry", "mv", "--input", f"A={path}", "--size", "K=5")
    assert proc.returncode == 1, proc.stdout
    assert "bad.npy" in proc.stderr
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr


def test_target_cpu_correct_or_unavailable(tmp_path, rng):
    a, b = f32(rng, 7, 5), f32(rng, 5, 3)
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": a, "B": b}, outputs=["C"],
                 extra=["--target", "cpu"], expect_ok=False)
    if res.proc.returncode == 0:
        got = res.outputs["C"]
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max())
        assert "on cpu" in res.proc.stdout
    else:
        assert res.proc.returncode == 1
        assert "not available" in res.proc.stderr.lower(), res.proc.stderr


def test_check_flag(tmp_path, rng):
    res = run_tc(tmp_path, "examples/softmax.tc", inputs={"X": f32(rng, 5, 11)}, outputs=["Y"],
                 extra=["--check"])
    assert re.search(r"check Y: max rel error \S+ .*: ok", res.proc.stdout), res.proc.stdout


def test_check_flag_in_out(tmp_path, rng):
    # in/out C: the reference run must start from the same C
    res = run_tc(tmp_path, "examples/sgemm.tc",
                 inputs={"A": f32(rng, 3, 5), "B": f32(rng, 5, 7), "C": f32(rng, 3, 7)},
                 sets={"alpha": 1.5, "beta": -0.5}, extra=["--check"])
    assert "check C:" in res.proc.stdout and "ok" in res.proc.stdout


def test_check_tolerance_follows_narrowest_float(tmp_path, rng):
    """A float32 temporary feeding a float64 output is as close as float32
    allows: --check gives it float32's tolerance (tsl_args_tolerance). It
    used float64's 1e-12 and failed on the CPU's few-ulp expf; an output
    computed in float64 only keeps 1e-12."""
    prog = tmp_path / "t.tc"
    prog.write_text("def f(float64(N) A) -> (Y, Z) {\n"
                    "  T(i) = exp(float32(A(i))) * tanh(float32(A(i)))\n"
                    "  Y(i) = T(i) + A(i)\n"
                    "  Z(i) = A(i) * A(i) + 1\n}\n")
    a = rng.uniform(-2, 2, size=1009)
    res = run_tc(tmp_path, str(prog), inputs={"A": a}, extra=["--target", "cpu", "--check"])
    out = res.proc.stdout
    assert re.search(r"check Y: .*tolerance 1\.0e-05.*: ok", out), out
    assert re.search(r"check Z: .*tolerance 1\.0e-12.*: ok", out), out


# ---- scalars ---------------------------------------------------------------------------

def test_set_scalars(tmp_path, rng):
    a, b, c = f32(rng, 3, 5), f32(rng, 5, 7), f32(rng, 3, 7)
    res = run_tc(tmp_path, "examples/sgemm.tc", inputs={"A": a, "B": b, "C": c},
                 sets={"alpha": 2.0, "beta": 0.0}, outputs=["C"])
    want = 2.0 * (a.astype(np.float64) @ b.astype(np.float64))
    assert np.abs(res.outputs["C"] - want).max() <= 1e-5 * max(1.0, np.abs(want).max())
    assert "alpha=2" in res.proc.stdout


def test_missing_scalar_is_named(tmp_path, rng):
    res = run_tc(tmp_path, "examples/sgemm.tc", sets={"alpha": 1.0},
                 sizes={"N": 3, "M": 5, "K": 7}, expect_ok=False)
    assert res.proc.returncode == 1
    assert "beta" in res.proc.stderr and "--set beta=" in res.proc.stderr


@pytest.mark.parametrize("sets", [{"gamma": 1.0}, {"A": 1.0}])
def test_set_wrong_name(tmp_path, sets):
    res = run_tc(tmp_path, "examples/sgemm.tc", sets={"alpha": 1.0, "beta": 1.0, **sets},
                 sizes={"N": 3, "M": 5, "K": 7}, expect_ok=False)
    assert res.proc.returncode == 1
    assert list(sets)[0] in res.proc.stderr


def test_set_not_a_number():
    proc = run_cli("run", "examples/sgemm.tc", "--set", "alpha=abc", "--set", "beta=1",
                   "--size", "N=3", "--size", "M=5", "--size", "K=7")
    assert proc.returncode == 1
    assert "alpha" in proc.stderr


# ---- entries ----------------------------------------------------------------------------

def test_several_defs_need_entry():
    proc = run_cli("run", "examples/tmm.tc", "--size", "M=3", "--size", "K=5", "--size", "N=7")
    assert proc.returncode == 1
    assert "tmm" in proc.stderr and "tbmm" in proc.stderr and "--entry" in proc.stderr


def test_entry_picks_def():
    proc = run_cli("run", "examples/tmm.tc", "--entry", "tbmm", "--size", "B=3", "--size", "N=5",
                   "--size", "M=7", "--size", "K=1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tbmm: X(3,5,7) float32, Y(3,1,7) float32 -> Z(3,5,1) float32")


def test_unknown_entry():
    proc = run_cli("run", "examples/tmm.tc", "--entry", "nosuch")
    assert proc.returncode == 1
    assert "nosuch" in proc.stderr


# ---- outputs and dtypes ---------------------------------------------------------------------

DTYPE_PROGRAM = """
# one def per dtype family, for --output dtypes
def dbl(double(N) A) -> (B) {
  B(i) = A(i) * 2
}
def addi(int32(N) A, int32(N) B) -> (C) {
  C(i) = A(i) + B(i)
}
def half16(float16(N) A) -> (B) {
  B(i) = A(i) * A(i)
}
def ismax(float(N) A, float(N) B) -> (C) {
  C(i) = A(i) > B(i)
}
"""


def test_output_dtype_f64(tmp_path, rng):
    prog = write(tmp_path, "dtypes.tc", DTYPE_PROGRAM)
    a = rng.uniform(-1, 1, size=13)
    res = run_tc(tmp_path, prog, entry="dbl", inputs={"A": a}, outputs=["B"])
    assert res.outputs["B"].dtype == np.float64
    assert np.abs(res.outputs["B"] - 2 * a).max() <= 1e-15


def test_output_dtype_int32(tmp_path, rng):
    prog = write(tmp_path, "dtypes.tc", DTYPE_PROGRAM)
    a = rng.integers(-1000, 1000, size=11, dtype=np.int32)
    b = rng.integers(-1000, 1000, size=11, dtype=np.int32)
    res = run_tc(tmp_path, prog, entry="addi", inputs={"A": a, "B": b}, outputs=["C"])
    assert res.outputs["C"].dtype == np.int32
    assert np.array_equal(res.outputs["C"], a + b)


def test_output_dtype_f16(tmp_path, rng):
    prog = write(tmp_path, "dtypes.tc", DTYPE_PROGRAM)
    a = rng.uniform(-1, 1, size=7).astype(np.float16)
    res = run_tc(tmp_path, prog, entry="half16", inputs={"A": a}, outputs=["B"])
    assert res.outputs["B"].dtype == np.float16
    want = a.astype(np.float64) ** 2
    assert np.abs(res.outputs["B"] - want).max() <= 1e-3


def test_output_dtype_bool(tmp_path, rng):
    prog = write(tmp_path, "dtypes.tc", DTYPE_PROGRAM)
    a, b = f32(rng, 17), f32(rng, 17)
    res = run_tc(tmp_path, prog, entry="ismax", inputs={"A": a, "B": b}, outputs=["C"])
    assert res.outputs["C"].dtype == np.bool_
    assert np.array_equal(res.outputs["C"], a > b)


def test_unknown_output_name(tmp_path, rng):
    res = run_tc(tmp_path, "examples/mv.tc", entry="mv", inputs={"A": f32(rng, 3, 5), "x": f32(rng, 5)},
                 outputs=["Z"], expect_ok=False)
    assert res.proc.returncode == 1
    assert "Z" in res.proc.stderr


def test_output_unwritable(tmp_path, rng):
    proc = run_cli("run", "examples/mv.tc", "--entry", "mv", "--size", "M=3", "--size", "K=5", "--output",
                   f"C={tmp_path}/no/such/dir/c.npy")
    assert proc.returncode == 1
    assert "c.npy" in proc.stderr


# ---- zero-size dims ---------------------------------------------------------------------
# The contract: a size of 0 gives empty outputs (and an empty reduction the
# identity), on every target.

def zero_size_outcome(proc, path):
    """The output array of a run that must succeed."""
    assert proc.returncode == 0, proc.stderr
    return np.load(path)


def test_zero_size_rows(tmp_path, rng):
    np.save(tmp_path / "a.npy", np.zeros((0, 5), np.float32))
    np.save(tmp_path / "b.npy", f32(rng, 5, 7))
    proc = run_cli("run", "examples/matmul.tc", "--input", f"A={tmp_path}/a.npy", "--input",
                   f"B={tmp_path}/b.npy", "--output", f"C={tmp_path}/c.npy")
    c = zero_size_outcome(proc, tmp_path / "c.npy")
    assert c.shape == (0, 7) and c.dtype == np.float32


def test_zero_size_random(tmp_path):
    proc = run_cli("run", "examples/matmul.tc", "--size", "M=3", "--size", "K=5", "--size", "N=0",
                   "--output", f"C={tmp_path}/c.npy")
    c = zero_size_outcome(proc, tmp_path / "c.npy")
    assert c.shape == (3, 0)


def test_zero_size_reduction(tmp_path):
    # an empty reduction leaves the identity: C = 0
    proc = run_cli("run", "examples/matmul.tc", "--size", "M=3", "--size", "K=0", "--size", "N=5",
                   "--output", f"C={tmp_path}/c.npy")
    c = zero_size_outcome(proc, tmp_path / "c.npy")
    assert c.shape == (3, 5) and np.array_equal(c, np.zeros((3, 5), np.float32))


# ---- compile ---------------------------------------------------------------------------

@pytest.mark.parametrize("what", ["ast", "ranges"])
def test_compile_emit(what):
    proc = run_cli("compile", "examples/tmm.tc", f"--emit={what}")
    assert proc.returncode == 0, proc.stderr
    assert "tmm" in proc.stdout and "tbmm" in proc.stdout
    one = run_cli("compile", "examples/tmm.tc", "--entry", "tbmm", "--emit", what)
    assert one.returncode == 0, one.stderr
    assert "tbmm" in one.stdout


@pytest.mark.parametrize("what,want", [("tile", "kernel "), ("expand", "kernel "), ("select", "kernel "),
                                       ("plan", "launch 0:")])
def test_compile_emit_stages(what, want):
    """Every stage of the compile driver prints, for the chosen target."""
    for target in ("cpu", "cuda"):
        proc = run_cli("compile", "examples/softmax.tc", "--target", target, f"--emit={what}")
        assert proc.returncode == 0, proc.stderr
        assert want in proc.stdout, proc.stdout[:400]


SPECS = re.compile(r"^\s*(\S+ = )?(load_global|store_global|load_shared|store_shared|copy_async|mma|wgmma|"
                   r"tma_load|tma_store) ", re.M)


@pytest.mark.parametrize("target,arch,want", [
    ("cuda", "sm_80", ["atom mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "atom ldmatrix.x4",
                       "atom ldmatrix.x2.trans", "atom cp.async.cg.shared.global"]),
    ("cuda", "sm_90a", ["atom wgmma.mma_async.sync.aligned.m64n", "atom cp.async.bulk.tensor.2d.shared.global"]),
    ("cpu", None, ["atom cpu.copy"]),
])
def test_compile_select_writes_atoms(target, arch, want):
    """The driver's select pass gives every spec of every kernel an atom of
    the target, shown by --emit=select: the sm_80 GEMM plan its mma.sync,
    ldmatrix and cp.async rows, the sm_90a plan its wgmma and TMA rows."""
    args = ["compile", "bench/hopper/layouts.tc", "--entry", "nn", "--target", target, "--emit=select"]
    if arch:
        args += ["--arch", arch]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stdout.splitlines() if SPECS.match(l)]
    assert lines and all(" atom " in l for l in lines), [l for l in lines if " atom " not in l][:3]
    for w in want:
        assert w in proc.stdout, w


def test_tessel_dump_stages():
    """TESSEL_DUMP (read by the CLI) prints the asked stages on stderr, in
    pass order, and the run still happens; an unknown stage is a usage error."""
    env = dict(os.environ, TESSEL_DUMP="plan,tile,source")
    proc = run_cli("run", "examples/softmax.tc", "--target", "cpu", "--size", "N=3", "--size", "D=5", env=env)
    assert proc.returncode == 0, proc.stderr
    heads = re.findall(r"== TESSEL_DUMP (\w+):cpu of 'softmax' ==", proc.stderr)
    assert heads == ["tile", "source", "plan"], heads
    assert "tsl_kernel_softmax" in proc.stderr and "Y(3,5)" in proc.stdout
    env["TESSEL_DUMP"] = "tile,nonsense"
    bad = run_cli("compile", "examples/softmax.tc", "--emit=c", env=env)
    assert bad.returncode == 2 and "unknown stage 'nonsense'" in bad.stderr, bad.stderr


def test_options_reach_the_plan(tmp_path):
    """--options and TESSEL_OPTIONS (and the older TESSEL_CONTRACT_CPU) set
    the strategies' choices; the run with them matches NumPy; a bad key is
    a usage error naming it; a combination the plan cannot build says why."""
    tile = run_cli("compile", "examples/matmul.tc", "--target", "cpu", "--emit=tile",
                   "--options", "contract.cpu.bm=64,contract.cpu.tm=4")
    assert tile.returncode == 0, tile.stderr
    assert "grid(cdiv(M, 64), cdiv(N, 128))" in tile.stdout
    env = dict(os.environ, TESSEL_CONTRACT_CPU="48,64,64,3,16,1")
    legacy = run_cli("compile", "examples/matmul.tc", "--target", "cpu", "--emit=tile", env=env)
    assert "grid(cdiv(M, 48), cdiv(N, 64))" in legacy.stdout, legacy.stderr
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (37, 53)).astype(np.float32)
    b = rng.uniform(-1, 1, (53, 71)).astype(np.float32)
    env = dict(os.environ, TESSEL_OPTIONS="contract.cpu.bn=64,cpu.threads=1")
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": a, "B": b}, outputs=["C"],
                 extra=["--target", "cpu", "--options", "contract.cpu.bk=64"], env=env)
    np.testing.assert_allclose(res.outputs["C"], a @ b, rtol=1e-4, atol=1e-4)
    bad = run_cli("run", "examples/matmul.tc", "--target", "cpu", "--options", "contract.cpu.bogus=3")
    assert bad.returncode == 2 and "no such key" in bad.stderr, bad.stderr
    rej = run_cli("run", "examples/matmul.tc", "--target", "cpu", "--size", "M=3", "--size", "K=3",
                  "--size", "N=3", "--options", "contract.cpu.tm=5")
    assert rej.returncode == 1 and "not a whole number of 5x16 thread tiles" in rej.stderr, rej.stderr


def test_allow_tf32_flag(tmp_path):
    """--allow-tf32 is accepted by compile and run, takes no value, and on
    the CPU leaves f32 exact (--check at f32's tolerance still passes)."""
    rng = np.random.default_rng()
    a = rng.uniform(-1, 1, (23, 41)).astype(np.float32)
    b = rng.uniform(-1, 1, (41, 17)).astype(np.float32)
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": a, "B": b}, outputs=["C"],
                 extra=["--target", "cpu", "--allow-tf32", "--check"])
    np.testing.assert_allclose(res.outputs["C"], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    tile = run_cli("compile", "examples/matmul.tc", "--target", "cpu", "--allow-tf32", "--emit=tile")
    assert tile.returncode == 0, tile.stderr
    bad = run_cli("run", "examples/matmul.tc", "--allow-tf32=1")
    assert bad.returncode == 2 and "takes no value" in bad.stderr, bad.stderr


def test_compile_bad_program(tmp_path):
    path = write(tmp_path, "bad.tc", "def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}\n")
    proc = run_cli("compile", path, "--emit=ast")
    assert proc.returncode == 1
    assert re.search(r"bad\.tc:\d+:\d+: error:", proc.stderr), proc.stderr


# ---- random inputs per dtype, conversions, printing -----------------------------------------

RANDOM_PROGRAM = """
def cp(float(N) F, int32(N) I, uint8(N) U, bool(N) Q) -> (F2, I2, U2, Q2) {
  F2(i) = F(i)
  I2(i) = I(i)
  U2(i) = U(i)
  Q2(i) = Q(i)
}
def total(float(N) A) -> (r) {
  r() +=! A(i)
}
"""


def test_random_input_ranges(tmp_path):
    prog = write(tmp_path, "rand.tc", RANDOM_PROGRAM)
    res = run_tc(tmp_path, prog, entry="cp", sizes={"N": 997}, outputs=["F2", "I2", "U2", "Q2"])
    f, i, u, q = (res.outputs[k] for k in ("F2", "I2", "U2", "Q2"))
    assert f.dtype == np.float32 and f.min() >= -1 and f.max() < 1 and len(np.unique(f)) > 900
    assert i.dtype == np.int32 and i.min() == -8 and i.max() == 7
    assert u.dtype == np.uint8 and u.min() == 0 and u.max() == 7
    assert q.dtype == np.bool_ and 0 < q.sum() < 997


def test_rank0_output(tmp_path, rng):
    prog = write(tmp_path, "rand.tc", RANDOM_PROGRAM)
    a = f32(rng, 13)
    res = run_tc(tmp_path, prog, entry="total", inputs={"A": a}, outputs=["r"])
    assert res.outputs["r"].shape == ()
    assert abs(float(res.outputs["r"]) - float(a.astype(np.float64).sum())) <= 1e-5
    assert "-> r() float32" in res.proc.stdout


def test_input_dtype_converted(tmp_path, rng):
    # float64 arrays for float32 parameters are converted, with a note
    a, b = rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (5, 7))
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": a, "B": b}, outputs=["C"])
    assert "converted from float64 to float32" in res.proc.stderr
    want = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    assert np.abs(res.outputs["C"] - want).max() <= 1e-5 * max(1.0, np.abs(want).max())


def test_print_whole_output(tmp_path, rng):
    a, x = f32(rng, 3, 5), f32(rng, 5)
    res = run_tc(tmp_path, "examples/mv.tc", entry="mv", inputs={"A": a, "x": x},
                 extra=["--print"])
    line = res.proc.stdout.splitlines()[1]
    assert "values:" in line, line
    vals = [float(v) for v in line.split("values:")[1].split()]
    want = a.astype(np.float64) @ x.astype(np.float64)
    assert np.allclose(vals, want, rtol=1e-5, atol=1e-5)


def test_check_examples_without_entry_when_single():
    proc = run_cli("run", "examples/softmax.tc", "--size", "N=3", "--size", "D=7", "--check")
    assert proc.returncode == 0, proc.stderr
    assert re.match(r"softmax: X\(3,7\) float32 -> Y\(3,7\) float32 on (cpu|cuda) in ", proc.stdout)
    assert "check Y: max rel error" in proc.stdout


def test_input_for_output_only_name(tmp_path, rng):
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"C": f32(rng, 3, 7)}, sizes={"M": 3},
                 expect_ok=False)
    assert res.proc.returncode == 1
    assert "C" in res.proc.stderr and "output" in res.proc.stderr


def test_unknown_size_symbol():
    proc = run_cli("run", "examples/matmul.tc", "--size", "M=3", "--size", "K=5", "--size", "N=7",
                   "--size", "Q=2")
    assert proc.returncode == 1
    assert "Q" in proc.stderr


def test_size_disagrees_with_input(tmp_path, rng):
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": f32(rng, 3, 5)},
                 sizes={"M": 4, "N": 7}, expect_ok=False)
    assert res.proc.returncode == 1
    assert "M" in res.proc.stderr and "A" in res.proc.stderr


INT_SCALAR_PROGRAM = """
def scale(int32 s, float(N) A) -> (B) {
  B(i) = A(i) * s
}
"""


def test_int_scalar(tmp_path, rng):
    prog = write(tmp_path, "scale.tc", INT_SCALAR_PROGRAM)
    a = f32(rng, 11)
    res = run_tc(tmp_path, prog, inputs={"A": a}, sets={"s": -3}, outputs=["B"])
    assert np.abs(res.outputs["B"] - (-3.0) * a.astype(np.float64)).max() <= 1e-5
    bad = run_tc(tmp_path, prog, inputs={"A": a}, sets={"s": 2.5}, expect_ok=False)
    assert bad.proc.returncode == 1
    assert "s" in bad.proc.stderr and "integer" in bad.proc.stderr


@pytest.mark.parametrize("sizes,shape", [(("M=3", "K=0", "N=5"), (3, 5)), (("M=0", "K=4", "N=2"), (0, 2))])
def test_zero_size_cpu_target(tmp_path, sizes, shape):
    args = []
    for s in sizes:
        args += ["--size", s]
    proc = run_cli("run", "examples/matmul.tc", *args, "--target", "cpu", "--check",
                   "--output", f"C={tmp_path}/c.npy")
    c = zero_size_outcome(proc, tmp_path / "c.npy")
    assert c.shape == shape and np.array_equal(c, np.zeros(shape, np.float32))


def test_default_target_and_override():
    # no GPU on a CI machine: the default is the CPU; TESSEL_TARGET overrides
    proc = run_cli("run", "examples/softmax.tc", "--size", "N=2", "--size", "D=5")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r" on (cpu|cuda) in ", proc.stdout)
    env = dict(os.environ, TESSEL_TARGET="interp")
    proc = run_cli("run", "examples/softmax.tc", "--size", "N=2", "--size", "D=5", env=env)
    assert proc.returncode == 0, proc.stderr
    assert " on interp in " in proc.stdout


@pytest.mark.parametrize("cmd", [["run"], ["bench", "--budget", "0.1"], ["tune", "--budget", "1"],
                                 ["compile", "--emit", "tile"]])
def test_bad_tessel_target_is_an_error(cmd):
    # a TESSEL_TARGET that names no target is refused by every command that
    # takes the default target (bench and tune ran on the CPU before)
    env = dict(os.environ, TESSEL_TARGET="gpux")
    sizes = [] if cmd[0] == "compile" else ["--size", "N=2", "--size", "D=5"]
    proc = run_cli(cmd[0], "examples/softmax.tc", *cmd[1:], *sizes, env=env)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"tessel {cmd[0]}: TESSEL_TARGET=gpux is not a target (interp, cpu or cuda" in proc.stderr
    assert proc.stdout == ""
