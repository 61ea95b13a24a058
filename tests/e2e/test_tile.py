"""`tessel tile` end to end: the seed programs of examples/tile/ run on the
tile interpreter through the CLI and compared with NumPy, on fresh random
data and sizes that are not tile multiples; mutated programs (wrong layout,
wrong decomposition, missing wait or barrier) must fail visibly."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLES, ROOT, TESSEL, run_cli

TILE = EXAMPLES / "tile"


def run_tile(tmp_path, program, inputs, outputs, extra=(), expect_ok=True):
    """Run `tessel tile run PROGRAM`; returns (process, {name: array})."""
    args = ["tile", "run", program]
    for name, arr in inputs.items():
        path = tmp_path / f"in_{name}.npy"
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    paths = {}
    for name in outputs:
        paths[name] = tmp_path / f"out_{name}.npy"
        args += ["--output", f"{name}={paths[name]}"]
    proc = run_cli(*args, *extra)
    if expect_ok:
        assert proc.returncode == 0, f"exit {proc.returncode}\nstderr:\n{proc.stderr}"
    got = {n: np.load(p) for n, p in paths.items()} if proc.returncode == 0 else {}
    return proc, got


def mutated(tmp_path, name, old, new, text=None):
    """A copy of examples/tile/NAME (or of `text`) with `old` replaced once."""
    text = text if text is not None else (TILE / name).read_text()
    assert old in text, f"{old!r} not in {name}"
    path = tmp_path / f"mut_{name}"
    path.write_text(text.replace(old, new, 1))
    return path


def test_examples_check_and_round_trip(tmp_path):
    for f in sorted(TILE.glob("*.tile")):
        proc = run_cli("tile", "check", f)
        assert proc.returncode == 0, proc.stderr
        printed = run_cli("tile", "print", f)
        assert printed.returncode == 0, printed.stderr
        again = tmp_path / f.name
        again.write_text(printed.stdout)
        assert run_cli("tile", "print", again).stdout == printed.stdout
        # both forms of the pipelines: cp.async (sm_80) and TMA (sm_90a); a
        # pipeline for several consumer warpgroups exists in the TMA form only
        for arch in ([], ["--arch", "sm_90a"]):
            expanded = run_cli("tile", "expand", f, *arch)
            if not arch and "needs the TMA form" in expanded.stderr:
                assert f"{f}:" in expanded.stderr  # located
                continue
            assert expanded.returncode == 0, expanded.stderr
            assert "pipeline(grid" not in expanded.stdout
            exp = tmp_path / f"exp_{f.name}"
            exp.write_text(expanded.stdout)
            assert run_cli("tile", "check", exp).returncode == 0


def test_ldmatrix_move(tmp_path, rng):
    x = rng.uniform(-4, 4, (16, 16)).astype(np.float16)
    _, got = run_tile(tmp_path, TILE / "ldmatrix_move.tile", {"x": x}, ["y"])
    np.testing.assert_array_equal(got["y"], x)


@pytest.mark.parametrize("old,new", [
    ("[gm, gn]", "[gn, gm]"),                                   # wrong decomposition
    ("layout local(2, 2).spatial(8, 4)", "layout column_local(2, 2).spatial(8, 4)"),  # wrong layout
])
def test_ldmatrix_move_mutations_are_wrong(tmp_path, rng, old, new):
    x = rng.uniform(-4, 4, (16, 16)).astype(np.float16)
    prog = mutated(tmp_path, "ldmatrix_move.tile", old, new)
    proc, got = run_tile(tmp_path, prog, {"x": x}, ["y"], expect_ok=False)
    assert proc.returncode != 0 or not np.array_equal(got["y"], x)


def gemm_ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("program", ["gemm.tile", "gemm_pipelined.tile"])
@pytest.mark.parametrize("mnk", [(67, 45, 40), (1, 1, 1), (64, 64, 32), "random"])
def test_gemm(tmp_path, rng, program, mnk):
    m, n, k = mnk if mnk != "random" else tuple(int(v) for v in rng.integers(1, 140, 3))
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    for extra in ([], ["--expand", "--shuffle"]):
        _, got = run_tile(tmp_path, TILE / program, {"a": a, "b": b}, ["c"], extra)
        c = got["c"]
        assert c.dtype == np.float32 and c.shape == (m, n)
        mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        assert np.all(np.abs(c - gemm_ref(a, b)) <= 1e-5 * mag + 1e-6), f"{program} {m}x{n}x{k} {extra}"


@pytest.mark.parametrize("mnk", [(67, 72, 40), (67, 45, 40), (1, 8, 8), "random"])
def test_gemm_pipelined_sm90a(tmp_path, rng, mnk):
    """The TMA form (`--arch sm_90a`) gives the bits of the cp.async form
    and of the unexpanded pipeline: rows 16-byte aligned (TMA) or not (the
    cp.async arm of its size branch)."""
    m, n, k = mnk if mnk != "random" else tuple(int(v) for v in rng.integers(1, 140, 3))
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    got = {}
    for extra in ([], ["--expand"], ["--arch", "sm_90a", "--shuffle"]):
        _, out = run_tile(tmp_path, TILE / "gemm_pipelined.tile", {"a": a, "b": b}, ["c"], extra)
        got[" ".join(extra)] = out["c"]
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    for key, c in got.items():
        assert np.all(np.abs(c - gemm_ref(a, b)) <= 1e-5 * mag + 1e-6), key
        np.testing.assert_array_equal(c, got[""])


def test_expand_sm90a_shows_the_tma_ring():
    proc = run_cli("tile", "expand", TILE / "gemm_wgmma_pipeline.tile", "--arch", "sm_90a")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for want in ("mbar_init pipe0_full, 1", "mbar_init pipe0_empty, 2", "role producer(1) regs(40) {\n      let pipe0_T",
                 "mbar_arrive pipe0_full[pipe0_ps] bytes 49152", "tma_load B[pipe0_i * 64, block_idx.y * 256]",
                 "mbar_wait pipe0_full[pipe0_slot], pipe0_j / 4 % 2"):
        assert want in out, want
    assert "copy_async" not in out


@pytest.mark.parametrize("mnk", [(100, 264, 520), (1, 8, 8)])
def test_gemm_wgmma_pipeline(tmp_path, rng, mnk):
    """examples/tile/gemm_wgmma_pipeline.tile: the warp-specialised GEMM as
    a pipeline, expanded for sm_90a, against NumPy (f16 out)."""
    m, n, k = mnk
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    _, got = run_tile(tmp_path, TILE / "gemm_wgmma_pipeline.tile", {"A": a, "B": b}, ["C"],
                      ["--arch", "sm_90a", "--shuffle"])
    ref = gemm_ref(a, b)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got["C"] - ref) <= 4.9e-4 * np.abs(ref) + 1e-5 * mag + 1e-6)


def test_pipeline_gpu_script_runs_on_the_interpreter():
    """bench/tile_pipeline_gpu.py (the lead's GPU step) checks itself on the
    interpreter, so it does not rot between GPU runs."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "tile_pipeline_gpu.py"), "--target", "interp",
                           "--tessel", str(TESSEL), "--only", "bias_add"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 passed, 0 failed" in proc.stdout, proc.stdout


@pytest.mark.parametrize("cut,want", [
    ("    wait 1\n", "missing wait"),
    ("    wait 1\n    sync\n", "synchronize"),
])
def test_gemm_pipelined_without_wait_or_sync_is_a_hazard(tmp_path, rng, cut, want):
    expanded = run_cli("tile", "expand", TILE / "gemm_pipelined.tile")
    assert expanded.returncode == 0, expanded.stderr
    keep = "    wait 1\n" if "sync" in cut else ""
    prog = mutated(tmp_path, "gemm_pipelined.tile", cut, keep, text=expanded.stdout)
    m, n, k = 40, 33, 130
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    proc, _ = run_tile(tmp_path, prog, {"a": a, "b": b}, ["c"], expect_ok=False)
    assert proc.returncode != 0
    assert "hazard" in proc.stderr and want in proc.stderr, proc.stderr
    assert "mut_gemm_pipelined.tile:" in proc.stderr  # located at the instruction


def test_gemm_without_sync_is_a_hazard(tmp_path, rng):
    prog = mutated(tmp_path, "gemm.tile", "    sync\n    ra =", "    ra =")
    a = rng.uniform(-1, 1, (70, 50)).astype(np.float16)
    b = rng.uniform(-1, 1, (50, 20)).astype(np.float16)
    proc, _ = run_tile(tmp_path, prog, {"a": a, "b": b}, ["c"], expect_ok=False)
    assert proc.returncode != 0 and "hazard" in proc.stderr, proc.stderr


@pytest.mark.parametrize("shape", [(3, 37, 45), (1, 16, 32), (5, 1, 1), "random"])
def test_blocked_sum(tmp_path, rng, shape):
    if shape == "random":
        shape = tuple(int(v) for v in rng.integers(1, 60, 3))
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    for extra in ([], ["--expand"]):
        _, got = run_tile(tmp_path, TILE / "blocked_sum.tile", {"x": x}, ["o"], extra)
        np.testing.assert_allclose(got["o"], x.sum(axis=0, dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_blocked_sum_reduction_on_first_axis_is_wrong(tmp_path, rng):
    """Pallas' incorrect_sum: without the r == 0 initialisation the resident
    output block starts as garbage, so the answer is wrong (NaN here)."""
    prog = mutated(tmp_path, "blocked_sum.tile", "if r == 0 {", "if r == -1 {")
    x = rng.uniform(-1, 1, (3, 20, 40)).astype(np.float32)
    proc, got = run_tile(tmp_path, prog, {"x": x}, ["o"], expect_ok=False)
    assert proc.returncode != 0 or not np.allclose(got["o"], x.sum(axis=0))


def test_run_errors_are_located(tmp_path, rng):
    a = rng.uniform(-1, 1, (8, 8)).astype(np.float16)
    b = rng.uniform(-1, 1, (9, 8)).astype(np.float16)  # K disagrees
    proc, _ = run_tile(tmp_path, TILE / "gemm.tile", {"a": a, "b": b}, ["c"], expect_ok=False)
    assert proc.returncode == 1 and "size K" in proc.stderr, proc.stderr
    bad = tmp_path / "bad.tile"
    bad.write_text("kernel k(x: global f32[4]) grid(1) threads(32) {\n  frob x\n}\n")
    proc = run_cli("tile", "check", bad)
    assert proc.returncode == 1 and "bad.tile:2:" in proc.stderr


def test_scheduler_ops(tmp_path, rng):
    """tests/tile_golden/sched_ops.tile: iota, comparisons, mod, masked
    gather/scatter, typed scalar, pow, erf, select — against NumPy."""
    import math
    prog = EXAMPLES.parent / "tests" / "tile_golden" / "sched_ops.tile"
    N = int(rng.integers(5, 200))
    n = int(rng.integers(1, N + 1))
    alpha = float(rng.uniform(-2, 2))
    x = rng.uniform(-1, 1, N).astype(np.float32)
    idx = rng.integers(-2, N + 2, (N, 3)).astype(np.int32)
    _, got = run_tile(tmp_path, prog, {"X": x, "I": idx}, ["Y"], ["--int", f"n={n}", "--scalar", f"alpha={alpha!r}"])
    ref = np.full(N, np.nan, np.float32)
    for f in range(n):
        r = f % 3
        if r == 0:
            ref[f] = -1.5
            continue
        j = int(idx[f, r])
        v = np.float32(x[j]) if 0 <= j < n else np.float32(0)
        y = np.float32(v * np.float32(alpha))
        ref[f] = np.float32(math.erf(np.float32(y * y)))
    np.testing.assert_allclose(got["Y"], ref, rtol=1e-6, atol=1e-6, equal_nan=True)


def test_gather_out_of_range_is_located(tmp_path, rng):
    prog = tmp_path / "g.tile"
    prog.write_text("kernel g(X: global f32[N], I: global i32[N], Y: global f32[N]) grid(1) threads(32) {\n"
                    "  i = load_global I[0] -> register i32[32] layout spatial(32)\n"
                    "  x = gather X, i -> register f32[32] layout spatial(32)\n"
                    "  store_global x -> Y[0]\n}\n")
    idx = rng.integers(0, 32, 32).astype(np.int32)
    idx[int(rng.integers(0, 32))] = 40
    proc, _ = run_tile(tmp_path, prog, {"X": rng.uniform(-1, 1, 32).astype(np.float32), "I": idx}, ["Y"],
                       expect_ok=False)
    assert proc.returncode == 1 and "g.tile:3:" in proc.stderr and "index 40" in proc.stderr, proc.stderr


def test_tilus_dequant_view(tmp_path, rng):
    """tests/tile_golden/dequant.tile: 3 x u8 per thread viewed as 4 x i6
    (Tilus figure 2c), cast to f16 in the mma B fragment layout."""
    prog = EXAMPLES.parent / "tests" / "tile_golden" / "dequant.tile"
    w = rng.integers(0, 256, 96).astype(np.uint8)
    _, got = run_tile(tmp_path, prog, {"Wq": w}, ["O"], ["--kernel", "dequant"])
    ref = np.zeros((16, 8))
    for t in range(32):  # u8 layout local(3).spatial(32): slot l of thread t is element 32 l + t
        bits = sum(int(w[32 * l + t]) << (8 * l) for l in range(3))
        for l in range(4):  # i6 slot l: 6 bits from bit 6 l, two's complement
            v = (bits >> (6 * l)) & 63
            v = v - 64 if v >= 32 else v
            ref[2 * (t % 4) + l % 2 + 8 * (l // 2), t // 4] = v
    np.testing.assert_array_equal(got["O"].astype(np.float64), ref)


HOPPER = EXAMPLES.parent / "tests" / "tile_hopper"


@pytest.mark.parametrize("mnk", [(100, 264, 520), (1, 8, 8), "random"])
def test_gemm_wgmma(tmp_path, rng, mnk):
    """examples/tile/gemm_wgmma.tile: warp-specialised (1 producer, 2
    consumer warpgroups), 4-stage TMA ring, wgmma m64n256k16, f16 out; sizes
    no tile divides (K and N multiples of 8 for TMA), deterministic and
    shuffled interleavings."""
    if mnk == "random":
        mnk = (int(rng.integers(1, 200)), 8 * int(rng.integers(1, 40)), 8 * int(rng.integers(1, 80)))
    m, n, k = mnk
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    ref = gemm_ref(a, b)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    for extra in ([], ["--shuffle", "--seed", str(int(rng.integers(1, 1 << 30)))]):
        _, got = run_tile(tmp_path, TILE / "gemm_wgmma.tile", {"A": a, "B": b}, ["C"], extra)
        c = got["C"]
        assert c.dtype == np.float16 and c.shape == (m, n)
        err = np.abs(c.astype(np.float64) - ref)
        assert np.all(err <= 4.9e-4 * np.abs(ref) + 1e-5 * mag + 1e-6), f"{m}x{n}x{k} {extra}: max err {err.max()}"


def test_gemm_wgmma_without_full_wait_is_a_hazard(tmp_path, rng):
    prog = mutated(tmp_path, "gemm_wgmma.tile", "        mbar_wait full[s], (k / 4) % 2\n", "")
    a = rng.uniform(-1, 1, (70, 136)).astype(np.float16)
    b = rng.uniform(-1, 1, (136, 40)).astype(np.float16)
    proc, _ = run_tile(tmp_path, prog, {"A": a, "B": b}, ["C"], expect_ok=False)
    assert proc.returncode == 1, proc.stderr
    assert "mut_gemm_wgmma.tile:" in proc.stderr and "error: hazard: the wgmma of consumer 0 reads as[" in proc.stderr
    assert "(missing mbar_wait?)" in proc.stderr, proc.stderr


def test_tma_store_epilogue(tmp_path, rng):
    """tests/tile_hopper/tma_scale.tile: TMA load, registers, fence_async,
    TMA store (Y is found as an output of tma_store), masked edges."""
    x = rng.uniform(-1, 1, (int(rng.integers(1, 100)), 4 * int(rng.integers(1, 40)))).astype(np.float32)
    _, got = run_tile(tmp_path, HOPPER / "tma_scale.tile", {"X": x}, ["Y"], ["--shuffle"])
    np.testing.assert_array_equal(got["Y"], 2 * x)


def test_hopper_deadlock_is_located(tmp_path, rng):
    a = rng.uniform(-1, 1, (64, 200)).astype(np.float16)
    b = rng.uniform(-1, 1, (200, 64)).astype(np.float16)
    proc, _ = run_tile(tmp_path, HOPPER / "hz_missing_arrive.tile", {"A": a, "B": b}, ["C"], expect_ok=False)
    assert proc.returncode == 1, proc.stderr
    assert "hz_missing_arrive.tile:17:9: error: deadlock: " in proc.stderr
    assert "producer 0 (line 17) waits on empty[0] for parity 0" in proc.stderr, proc.stderr


def test_select_shows_the_atoms(tmp_path, rng):
    """`tessel tile select` prints the program with the target's atoms; the
    selected text still runs and gives the same answer."""
    cuda = run_cli("tile", "select", TILE / "gemm.tile", "--target", "cuda")
    assert cuda.returncode == 0, cuda.stderr
    for atom in ("atom cp.async.cg.shared.global", "atom ldmatrix.x4", "atom ldmatrix.x2.trans",
                 "atom mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "atom st.global.v2.u32"):
        assert atom in cuda.stdout, atom
    cpu = run_cli("tile", "select", TILE / "gemm.tile")
    assert cpu.returncode == 0, cpu.stderr
    assert "atom cpu.copy" in cpu.stdout and "cp.async" not in cpu.stdout
    # the selected program is a program: it runs to the same result
    sel = tmp_path / "gemm_selected.tile"
    sel.write_text(cuda.stdout)
    m, n, k = 37, 71, 45
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    _, got = run_tile(tmp_path, sel, {"a": a, "b": b}, ["c"])
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(got["c"], ref, rtol=2e-3, atol=2e-3)


def test_select_errors(tmp_path):
    """An atom that does not fit, or a target without it, is an error at
    the instruction; an unknown target is a usage error."""
    bad = mutated(tmp_path, "gemm.tile", "copy_async a[bm, k * 32] -> sa bytes 16",
                  "copy_async a[bm, k * 32] -> sa bytes 8 atom cp.async.cg.shared.global")
    proc = run_cli("tile", "select", bad, "--target", "sm_90a")
    assert proc.returncode == 1
    assert "error: copy_async: atom cp.async.cg.shared.global has no form for this instruction and chunk size" in proc.stderr
    assert f"{bad}:" in proc.stderr
    proc = run_cli("tile", "select", TILE / "gemm.tile", "--target", "sm_70")
    assert proc.returncode == 2 and "unknown target 'sm_70'" in proc.stderr
