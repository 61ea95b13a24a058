"""The CPU target end to end: every def of examples/*.tc through
`tessel run --target cpu --check` on each shape set of test_examples.py
(dims of 1 and primes, fresh random inputs): the run must pass its own
comparison with the interpreter and give NumPy's answer. Also: an index out
of range through a gather is a clear located error with exit status 1, and
zero-size boxes launch nothing."""
import numpy as np
import pytest

from conftest import EXAMPLES, run_cli, run_tc
from test_examples import CASES, SPECS, compare, d


@pytest.mark.parametrize("key,which", CASES)
def test_example_on_cpu(tmp_path, rng, key, which):
    file, entry = key
    spec = SPECS[key]
    inputs = spec["make"](rng, spec["shapes"][which])
    sets = spec["scalars"](rng) if "scalars" in spec else {}
    want = spec["ref"]({**{k: d(v) for k, v in inputs.items()}, **sets})
    res = run_tc(tmp_path, f"examples/{file}", inputs=inputs, sets=sets, outputs=list(want),
                 entry=entry, extra=["--target", "cpu", "--check"])
    out = res.proc.stdout
    assert f" on cpu in " in out, out
    checks = [line for line in out.splitlines() if line.startswith("check ")]
    assert len(checks) == len(want), out
    assert all(line.endswith(": ok") for line in checks), out
    for name, ref in want.items():
        compare(name, res.outputs[name], ref, inputs)


def test_gather_out_of_range_on_cpu(tmp_path, rng):
    x = rng.uniform(-1, 1, size=5).astype(np.float32)
    idx = np.array([[1, 4, 0], [2, 7, 3]], dtype=np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"],
                 extra=["--target", "cpu"], expect_ok=False)
    assert res.proc.returncode == 1, res.proc.stdout + res.proc.stderr
    err = res.proc.stderr
    assert "index 7 out of range for dimension 0 of 'X' (size 5)" in err, err
    assert "gather.tc:" in err, err


def test_in_range_gather_after_an_error(tmp_path, rng):
    x = rng.uniform(-1, 1, size=5).astype(np.float32)
    idx = rng.integers(0, 5, size=(3, 2), dtype=np.int64)
    res = run_tc(tmp_path, "examples/gather.tc", inputs={"X": x, "I": idx}, outputs=["Z"],
                 extra=["--target", "cpu", "--check"])
    np.testing.assert_array_equal(res.outputs["Z"], x[idx])


def test_zero_size_boxes(tmp_path, rng):
    """A zero-size parallel box launches nothing and gives an empty output;
    an empty reduction box leaves the identity (`+=!`: zeros)."""
    b = rng.uniform(-1, 1, size=(7, 5)).astype(np.float32)
    res = run_tc(tmp_path, "examples/matmul.tc", inputs={"A": np.zeros((0, 7), np.float32), "B": b},
                 outputs=["C"], extra=["--target", "cpu", "--check"])
    assert res.outputs["C"].shape == (0, 5)
    res = run_tc(tmp_path, "examples/matmul.tc",
                 inputs={"A": np.zeros((3, 0), np.float32), "B": np.zeros((0, 4), np.float32)},
                 outputs=["C"], extra=["--target", "cpu", "--check"])
    np.testing.assert_array_equal(res.outputs["C"], np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("file", sorted(p.name for p in EXAMPLES.glob("*.tc")))
def test_emit_tile_checks_and_emit_c(tmp_path, file):
    """--emit=tile prints valid tile IR (tessel tile check accepts it) with
    the launch plan as comments, for the CPU and the CUDA target's plan;
    --emit=c prints the generated C."""
    for target in ("cpu", "cuda"):
        tile = run_cli("compile", f"examples/{file}", "--emit=tile", "--target", target)
        assert tile.returncode == 0, tile.stderr
        assert "// tessel schedule of" in tile.stdout and "kernel " in tile.stdout
        path = tmp_path / f"sched_{target}.tile"
        path.write_text(tile.stdout)
        chk = run_cli("tile", "check", path)
        assert chk.returncode == 0, chk.stdout + chk.stderr
    c = run_cli("compile", f"examples/{file}", "--emit=c")
    assert c.returncode == 0, c.stderr
    assert "tsl_kernel_" in c.stdout


def test_emit_tile_follows_the_target():
    """The CPU and CUDA plans of softmax differ (the GPU one has a warp per
    short row), and --emit=tile --target picks the one asked for."""
    cpu = run_cli("compile", "examples/softmax.tc", "--emit=tile", "--target", "cpu")
    cuda = run_cli("compile", "examples/softmax.tc", "--emit=tile", "--target", "cuda")
    assert cpu.returncode == 0 and cuda.returncode == 0, cpu.stderr + cuda.stderr
    assert cpu.stdout != cuda.stdout
    assert "threads(256)" in cuda.stdout
