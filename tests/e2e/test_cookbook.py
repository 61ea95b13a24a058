"""docs/cookbook.md runs: every ```tc block of it, on the interpreter,
the CPU target and (bench/gpu.sh, on a GPU machine; skipped without one)
the CUDA target, with --check against the interpreter, against NumPy's
version of what the recipe says it computes, for two size sets (ones,
and primes that no tile divides). Each def of the cookbook has one row
in RECIPES (inputs, sizes, scalars, the NumPy result); a recipe without
a row, or a row without a recipe, fails."""
import pathlib
import re

import numpy as np
import pytest

from conftest import ROOT, run_tc
from test_cuda_target import gpu_present

BOOK = pathlib.Path(ROOT) / "docs" / "cookbook.md"


def book_source():
    return "\n".join(re.findall(r"```tc\n(.*?)```", BOOK.read_text(), re.S))


def book_defs():
    return re.findall(r"^def (\w+)\(", book_source(), re.M)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def i8(rng, *shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv1d_pad_ref(x, w):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1)))
    H = x.shape[2]
    win = np.stack([xp[:, :, k:k + H] for k in range(3)], axis=-1)  # n c i k
    return np.einsum("ncik,fck->nfi", win, w.astype(np.float64))


def conv2d_pad_ref(x, w):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    H, W = x.shape[2:]
    y = np.zeros((x.shape[0], w.shape[0], H, W))
    for kh in range(3):
        for kw in range(3):
            y += np.einsum("nchw,fc->nfhw", xp[:, :, kh:kh + H, kw:kw + W], w[:, :, kh, kw].astype(np.float64))
    return y


def causal_softmax_ref(S):
    T = S.shape[0]
    m = np.where(np.tril(np.ones((T, T), bool)), S.astype(np.float64), -np.inf)
    return softmax(m, 1)


def masked_mean_ref(X, lens):
    T = X.shape[1]
    mask = np.arange(T)[None, :] < lens[:, None]
    s = (X.astype(np.float64) * mask[:, :, None]).sum(axis=1)
    return s / np.maximum(lens, 1)[:, None]


def split_heads_ref(X, Dh):
    B, T, E = X.shape
    H = E // Dh
    return X[:, :, :H * Dh].reshape(B, T, H, Dh).transpose(0, 2, 1, 3)


def merge_heads_ref(O):
    B, H, T, Dh = O.shape
    return O.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)


def rmsnorm_ref(X, g, eps):
    X = X.astype(np.float64)
    return X / np.sqrt((X * X).sum(axis=1, keepdims=True) / X.shape[1] + eps) * g


def log_softmax_ref(X):
    X = X.astype(np.float64)
    m = X.max(axis=1, keepdims=True)
    return X - m - np.log(np.exp(X - m).sum(axis=1, keepdims=True))


# def name -> (size sets, make(rng, sizes) -> inputs, scalars, reference(inputs, sizes) -> outputs).
# `sizes` lists what the inputs' shapes do not give (a where-only size) under "--size".
RECIPES = {
    "conv1d_pad": ([dict(N=1, C=1, H=1, F=1), dict(N=2, C=3, H=13, F=5)],
                   lambda r, s: {"x": f32(r, s["N"], s["C"], s["H"]), "w": f32(r, s["F"], s["C"], 3)}, {},
                   lambda i, s: {"y": conv1d_pad_ref(i["x"], i["w"])}),
    "conv2d_pad": ([dict(N=1, C=1, H=1, W=1, F=1), dict(N=2, C=3, H=7, W=11, F=5)],
                   lambda r, s: {"x": f32(r, s["N"], s["C"], s["H"], s["W"]), "w": f32(r, s["F"], s["C"], 3, 3)},
                   {}, lambda i, s: {"y": conv2d_pad_ref(i["x"], i["w"])}),
    "causal_softmax": ([dict(T=1), dict(T=37)], lambda r, s: {"S": f32(r, s["T"], s["T"])}, {},
                       lambda i, s: {"P": causal_softmax_ref(i["S"])}),
    "masked_mean": ([dict(B=1, T=1, D=1), dict(B=5, T=13, D=7)],
                    lambda r, s: {"X": f32(r, s["B"], s["T"], s["D"]),
                                  "len": r.integers(0, s["T"] + 1, s["B"]).astype(np.int64)}, {},
                    lambda i, s: {"M": masked_mean_ref(i["X"], i["len"])}),
    "argmax": ([dict(N=1, D=1), dict(N=7, D=41)], lambda r, s: {"X": f32(r, s["N"], s["D"])}, {},
               lambda i, s: {"idx": np.argmax(i["X"], axis=1).astype(np.int64)}),
    "onehot": ([dict(N=1, C=1, where="C"), dict(N=11, C=7, where="C")],
               lambda r, s: {"L": r.integers(0, s["C"], s["N"]).astype(np.int64)}, {},
               lambda i, s: {"Y": (i["L"][:, None] == np.arange(s["C"])[None, :]).astype(np.float32)}),
    "concat": ([dict(N=1, M=1), dict(N=13, M=5)], lambda r, s: {"A": f32(r, s["N"]), "B": f32(r, s["M"])}, {},
               lambda i, s: {"Y": np.concatenate([i["A"], i["B"]])}),
    "concat_cols": ([dict(R=1, N=1, M=1), dict(R=3, N=7, M=2)],
                    lambda r, s: {"A": f32(r, s["R"], s["N"]), "B": f32(r, s["R"], s["M"])}, {},
                    lambda i, s: {"Y": np.concatenate([i["A"], i["B"]], axis=1)}),
    "split_heads": ([dict(B=1, T=1, E=1, Dh=1, where="Dh"), dict(B=2, T=5, E=23, Dh=3, where="Dh")],
                    lambda r, s: {"X": f32(r, s["B"], s["T"], s["E"])}, {},
                    lambda i, s: {"Q": split_heads_ref(i["X"], s["Dh"])}),
    "merge_heads": ([dict(B=1, H=1, T=1, Dh=1), dict(B=2, H=3, T=5, Dh=7)],
                    lambda r, s: {"O": f32(r, s["B"], s["H"], s["T"], s["Dh"])}, {},
                    lambda i, s: {"Y": merge_heads_ref(i["O"])}),
    "cumsum": ([dict(N=1, T=1), dict(N=3, T=29)], lambda r, s: {"X": f32(r, s["N"], s["T"])}, {},
               lambda i, s: {"Y": np.cumsum(i["X"].astype(np.float64), axis=1)}),
    "gemm_i8": ([dict(M=1, K=1, N=1), dict(M=7, K=131, N=5)],
                lambda r, s: {"A": i8(r, s["M"], s["K"]), "B": i8(r, s["K"], s["N"])}, {},
                lambda i, s: {"C": i["A"].astype(np.int32) @ i["B"].astype(np.int32)}),
    "gemm_i8_scaled": ([dict(M=1, K=1, N=1), dict(M=7, K=131, N=5)],
                       lambda r, s: {"A": i8(r, s["M"], s["K"]), "B": i8(r, s["K"], s["N"]),
                                     "sa": r.random(s["M"]).astype(np.float32),
                                     "sb": r.random(s["N"]).astype(np.float32)}, {},
                       lambda i, s: {"Y": (i["A"].astype(np.int64) @ i["B"].astype(np.int64)) *
                                     i["sa"].astype(np.float64)[:, None] * i["sb"].astype(np.float64)[None, :]}),
    "rmsnorm": ([dict(N=1, D=1), dict(N=5, D=67)], lambda r, s: {"X": f32(r, s["N"], s["D"]), "g": f32(r, s["D"])},
                {"eps": 1e-5}, lambda i, s: {"Y": rmsnorm_ref(i["X"], i["g"], 1e-5)}),
    "log_softmax": ([dict(N=1, D=1), dict(N=5, D=67)], lambda r, s: {"X": f32(r, s["N"], s["D"])}, {},
                    lambda i, s: {"Y": log_softmax_ref(i["X"])}),
}


def test_every_recipe_has_a_test():
    assert sorted(book_defs()) == sorted(RECIPES), (sorted(book_defs()), sorted(RECIPES))


def test_the_cookbook_checks(tmp_path):
    from conftest import run_cli
    prog = tmp_path / "cookbook.tc"
    prog.write_text(book_source())
    r = run_cli("check", prog)
    assert r.returncode == 0 and f"({len(RECIPES)} defs:" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("target", ["interp", "cpu", "cuda"])
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe(tmp_path, rng, name, target):
    if target == "cuda" and not gpu_present():
        pytest.skip("no CUDA device")
    size_sets, make, scalars, reference = RECIPES[name]
    prog = tmp_path / "cookbook.tc"
    prog.write_text(book_source())
    for sizes in size_sets:
        inputs = make(rng, sizes)
        want = reference(inputs, sizes)
        given = {sizes["where"]: sizes[sizes["where"]]} if "where" in sizes else None
        r = run_tc(tmp_path, prog, entry=name, inputs=inputs, sets=scalars, sizes=given, outputs=list(want),
                   extra=["--target", target] + (["--check"] if target != "interp" else []))
        for out, ref in want.items():
            got = r.outputs[out]
            assert got.shape == ref.shape, (name, sizes, out, got.shape, ref.shape)
            if np.issubdtype(got.dtype, np.integer):
                assert got.dtype == ref.dtype, (name, out, got.dtype, ref.dtype)
                np.testing.assert_array_equal(got, ref, err_msg=f"{name} {sizes} {out}")
            else:
                scale = max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
                np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-6 * scale, err_msg=f"{name} {sizes} {out}")
        if target != "interp":
            assert "FAILED" not in r.proc.stdout, r.proc.stdout
