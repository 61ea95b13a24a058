"""Sizes a new user gives on the command line: a size only a `where` bound
uses (one-hot's class count), and parameters with constant dims (conv
weights `float(F,C,3,3)`) drawn at random from --size."""
import numpy as np
import pytest

from conftest import run_cli, run_tc

ONEHOT = "def onehot(int64(N) L) -> (Y) { Y(n,c) = L(n) == c ? 1.0 : 0.0 where c in 0:C }\n"
CONST = ("def scale(float(N,3) X) -> (Y) { Y(i,j) = X(i,j) * 2.0 }\n"
         "def conv(float(B,C,H,W) I, float(F,C,3,3) Wt) -> (O) {\n"
         "  O(b,f,h,w) +=! I(b,c,h + r,w + s) * Wt(f,c,r,s)\n}\n")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_where_only_size(tmp_path, target):
    prog = write(tmp_path, "onehot.tc", ONEHOT)
    rng = np.random.default_rng()
    C = int(rng.integers(2, 9))
    labels = rng.integers(0, C, 11).astype(np.int64)
    r = run_tc(tmp_path, prog, inputs={"L": labels}, sizes={"C": C}, outputs=["Y"],
               extra=["--target", target, "--check"])
    want = (labels[:, None] == np.arange(C)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(r.outputs["Y"], want)


def test_where_only_size_missing_or_unknown(tmp_path):
    prog = write(tmp_path, "onehot.tc", ONEHOT)
    r = run_cli("run", prog, "--size", "N=4")
    assert r.returncode != 0 and "size 'C' is not known" in r.stderr and "--size C=N" in r.stderr, r.stderr
    r = run_cli("run", prog, "--size", "N=4", "--size", "K=6")
    assert r.returncode != 0 and "no size named K (its sizes: N, C)" in r.stderr, r.stderr


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_random_inputs_with_constant_dims(tmp_path, target):
    prog = write(tmp_path, "const.tc", CONST)
    r = run_tc(tmp_path, prog, entry="scale", sizes={"N": 7}, outputs=["Y"],
               extra=["--target", target, "--check"])
    assert r.outputs["Y"].shape == (7, 3)
    assert "X(7,3) float32" in r.proc.stdout, r.proc.stdout
    r = run_tc(tmp_path, prog, entry="conv", sizes={"B": 2, "C": 3, "H": 9, "W": 11, "F": 5},
               outputs=["O"], extra=["--target", target, "--check"])
    assert r.outputs["O"].shape == (2, 5, 7, 9)
