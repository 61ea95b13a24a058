"""Every def of every examples/*.tc, run through `tessel run` on fresh
random inputs and compared with a NumPy reference computed here in
float64. Each example has at least two shape sets, with dims of 1 and
primes (never powers of two, except where a program fixes a size)."""
import re

import numpy as np
import pytest

from conftest import EXAMPLES, describe, run_tc


def f32(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def d(a):
    return a.astype(np.float64)


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---- one entry per def: file, shape sets, inputs, reference ---------------

def conv2d_ref(x, w, sh=1, sw=1):
    """x (B,C,H,W), w (F,C,KH,KW) -> (B,F,OH,OW), no padding."""
    b, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((b, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            out += np.einsum("bchw,fc->bfhw", patch, w[:, :, i, j])
    return out


def maxpool_ref(x):
    b, c, h, w = x.shape
    oh, ow = h // 2, w // 2
    x = x[:, :, :2 * oh, :2 * ow].reshape(b, c, oh, 2, ow, 2)
    return x.max(axis=(3, 5))


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lstm_ref(a):
    g = (np.einsum("bi,ghi->bgh", a["X"], a["Wx"]) + np.einsum("bj,ghj->bgh", a["Hprev"], a["Wh"])
         + a["bias"][None])
    cn = sigmoid(g[:, 1]) * a["Cprev"] + sigmoid(g[:, 0]) * np.tanh(g[:, 2])
    hn = sigmoid(g[:, 3]) * np.tanh(cn)
    return {"Hn": hn, "Cn": cn}


def attention_ref(a):
    dd = a["Q"].shape[2]
    s = np.einsum("bid,bjd->bij", a["Q"], a["K"]) / np.sqrt(dd)
    return {"O": np.einsum("bij,bje->bie", softmax_ref(s), a["V"])}


def attention_causal_ref(a):
    dd = a["Q"].shape[2]
    s = np.einsum("bid,bjd->bij", a["Q"], a["K"]) / np.sqrt(dd)
    tq, tk = s.shape[1], s.shape[2]
    s = np.where(np.arange(tk)[None, None, :] <= np.arange(tq)[None, :, None], s, -1e30)
    return {"O": np.einsum("bij,bje->bie", softmax_ref(s), a["V"])}


def layernorm_ref(a):
    x = a["X"]
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return {"Y": (x - mu) / np.sqrt(var + 1e-5) * a["gamma"] + a["beta"]}


SPECS = {
    ("matmul.tc", "matmul"): dict(
        shapes=[dict(M=1, K=7, N=13), dict(M=23, K=17, N=1), dict(M=37, K=41, N=29)],
        make=lambda r, s: {"A": f32(r, s["M"], s["K"]), "B": f32(r, s["K"], s["N"])},
        ref=lambda a: {"C": a["A"] @ a["B"]}),
    ("mv.tc", "mv"): dict(
        shapes=[dict(M=1, K=13), dict(M=29, K=1), dict(M=31, K=37)],
        make=lambda r, s: {"A": f32(r, s["M"], s["K"]), "x": f32(r, s["K"])},
        ref=lambda a: {"C": a["A"] @ a["x"]}),
    ("mv.tc", "mv_init"): dict(
        shapes=[dict(M=7, K=1), dict(M=1, K=19), dict(M=23, K=11)],
        make=lambda r, s: {"A": f32(r, s["M"], s["K"]), "x": f32(r, s["K"])},
        ref=lambda a: {"C": a["A"] @ a["x"]}),
    ("sgemm.tc", "sgemm"): dict(
        shapes=[dict(N=1, M=11, K=7), dict(N=19, M=23, K=5), dict(N=13, M=1, K=1)],
        make=lambda r, s: {"A": f32(r, s["N"], s["M"]), "B": f32(r, s["M"], s["K"]),
                           "C": f32(r, s["N"], s["K"])},
        scalars=lambda r: {"alpha": float(np.float32(r.uniform(0.5, 2.0))),
                           "beta": float(np.float32(r.uniform(-2.0, -0.5)))},
        ref=lambda a: {"C": a["beta"] * a["C"] + a["alpha"] * (a["A"] @ a["B"])}),
    ("fcrelu.tc", "fcrelu"): dict(
        shapes=[dict(B=1, I=7, O=5), dict(B=13, I=11, O=17), dict(B=3, I=1, O=1)],
        make=lambda r, s: {"in": f32(r, s["B"], s["I"]), "weight": f32(r, s["O"], s["I"]),
                           "bias": f32(r, s["O"])},
        ref=lambda a: {"out": relu(a["in"] @ a["weight"].T + a["bias"])}),
    ("conv2d.tc", "conv2d"): dict(
        shapes=[dict(B=1, IP=3, H=7, W=5, OP=1, KH=3, KW=1),
                dict(B=3, IP=1, H=11, W=13, OP=5, KH=1, KW=5),
                dict(B=1, IP=1, H=3, W=3, OP=1, KH=3, KW=3)],
        make=lambda r, s: {"X": f32(r, s["B"], s["IP"], s["H"], s["W"]),
                           "weight": f32(r, s["OP"], s["IP"], s["KH"], s["KW"])},
        ref=lambda a: {"out": conv2d_ref(a["X"], a["weight"])}),
    ("maxpool2x2.tc", "maxpool2x2"): dict(
        shapes=[dict(B=1, C=3, H=7, W=5), dict(B=3, C=1, H=3, W=11), dict(B=5, C=7, H=13, W=3)],
        make=lambda r, s: {"X": f32(r, s["B"], s["C"], s["H"], s["W"])},
        ref=lambda a: {"out": maxpool_ref(a["X"])}),
    ("gather.tc", "gather"): dict(
        shapes=[dict(N=7, A=1, B=13), dict(N=1, A=5, B=3), dict(N=31, A=11, B=7)],
        make=lambda r, s: {"X": f32(r, s["N"]),
                           "I": r.integers(0, s["N"], size=(s["A"], s["B"]), dtype=np.int64)},
        ref=lambda a: {"Z": a["X"][a["I"].astype(np.int64)]}),
    ("sconv2d.tc", "sconv2d"): dict(
        shapes=[dict(N=1, C=3, H=7, W=11, F=5, KH=3, KW=3),
                dict(N=3, C=1, H=13, W=7, F=1, KH=1, KW=5),
                dict(N=1, C=1, H=5, W=3, F=3, KH=5, KW=3)],
        make=lambda r, s: {"I": f32(r, s["N"], s["C"], s["H"], s["W"]),
                           "W": f32(r, s["F"], s["C"], s["KH"], s["KW"]), "B": f32(r, s["F"])},
        ref=lambda a: {"O": conv2d_ref(a["I"], a["W"], 2, 3) + a["B"][None, :, None, None]}),
    ("conv1d.tc", "conv1d"): dict(
        shapes=[dict(M=7, N=3), dict(M=13, N=13), dict(M=5, N=1), dict(M=1, N=1)],
        make=lambda r, s: {"I": f32(r, s["M"]), "K": f32(r, s["N"])},
        ref=lambda a: {"O": np.correlate(a["I"], a["K"], mode="valid")}),
    ("outer_product_mm.tc", "outerProductMM"): dict(
        shapes=[dict(P=1, Q=3, R=5, S=7, T=1), dict(P=3, Q=5, R=1, S=1, T=11)],
        make=lambda r, s: {"A": f32(r, s["P"], s["Q"], s["R"]),
                           "B": f32(r, s["S"], s["R"], s["T"])},
        ref=lambda a: {"O": np.einsum("pqr,srt->psqt", a["A"], a["B"])}),
    ("tmm.tc", "tmm"): dict(
        shapes=[dict(M=1, K=5, N=7), dict(M=13, K=17, N=11), dict(M=3, K=1, N=1)],
        make=lambda r, s: {"A": f32(r, s["M"], s["K"]), "B": f32(r, s["N"], s["K"])},
        ref=lambda a: {"C": a["A"] @ a["B"].T}),
    ("tmm.tc", "tbmm"): dict(
        shapes=[dict(B=1, N=5, M=7, K=3), dict(B=5, N=3, M=11, K=1), dict(B=3, N=1, M=1, K=7)],
        make=lambda r, s: {"X": f32(r, s["B"], s["N"], s["M"]), "Y": f32(r, s["B"], s["K"], s["M"])},
        ref=lambda a: {"Z": np.einsum("bnm,bkm->bnk", a["X"], a["Y"])}),
    ("group_conv.tc", "group_convolution"): dict(
        shapes=[dict(N=1, G=3, C=1, H=5, W=7, F=3, KH=3, KW=1),
                dict(N=3, G=1, C=3, H=7, W=5, F=1, KH=1, KW=3)],
        make=lambda r, s: {"I": f32(r, s["N"], s["G"], s["C"], s["H"], s["W"]),
                           "W1": f32(r, s["G"], s["F"], s["C"], s["KH"], s["KW"]),
                           "B": f32(r, s["G"], s["F"])},
        ref=lambda a: {"O": np.stack([conv2d_ref(a["I"][:, g], a["W1"][g])
                                      for g in range(a["I"].shape[1])], axis=1)
                       + a["B"][None, :, :, None, None]}),
    ("lut2.tc", "lut2"): dict(
        shapes=[dict(E1=11, E2=7, D=5, B=3, L1=1, L2=13), dict(E1=1, E2=13, D=1, B=1, L1=7, L2=3)],
        make=lambda r, s: {"LUT1": f32(r, s["E1"], s["D"]),
                           "I1": r.integers(0, s["E1"], size=(s["B"], s["L1"]), dtype=np.int64),
                           "LUT2": f32(r, s["E2"], s["D"]),
                           "I2": r.integers(0, s["E2"], size=(s["B"], s["L2"]), dtype=np.int64)},
        ref=lambda a: (lambda o1, o2: {"O1": o1, "O2": o2, "O": o1 + o2})(
            a["LUT1"][a["I1"].astype(np.int64)].sum(axis=1),
            a["LUT2"][a["I2"].astype(np.int64)].sum(axis=1))),
    ("layernorm.tc", "layernorm"): dict(
        shapes=[dict(N=1, D=7), dict(N=13, D=1), dict(N=11, D=37)],
        make=lambda r, s: {"X": f32(r, s["N"], s["D"]), "gamma": f32(r, s["D"]),
                           "beta": f32(r, s["D"])},
        ref=layernorm_ref),
    ("softmax.tc", "softmax"): dict(
        shapes=[dict(N=1, D=13), dict(N=7, D=1), dict(N=17, D=23)],
        make=lambda r, s: {"X": f32(r, s["N"], s["D"]) * np.float32(5)},
        ref=lambda a: {"Y": softmax_ref(a["X"])}),
    ("mlp3.tc", "mlp3"): dict(
        shapes=[dict(B=1, I=5, H1=7, H2=3, O=1), dict(B=13, I=11, H1=1, H2=17, O=5)],
        make=lambda r, s: {"X": f32(r, s["B"], s["I"]), "W1": f32(r, s["H1"], s["I"]),
                           "B1": f32(r, s["H1"]), "W2": f32(r, s["H2"], s["H1"]),
                           "B2": f32(r, s["H2"]), "W3": f32(r, s["O"], s["H2"]),
                           "B3": f32(r, s["O"])},
        ref=lambda a: {"Y": relu(relu(relu(a["X"] @ a["W1"].T + a["B1"]) @ a["W2"].T + a["B2"])
                                 @ a["W3"].T + a["B3"])}),
    ("lstm.tc", "lstm_cell"): dict(
        shapes=[dict(B=1, I=3, H=5), dict(B=7, I=1, H=13), dict(B=3, I=11, H=1)],
        make=lambda r, s: {"X": f32(r, s["B"], s["I"]), "Hprev": f32(r, s["B"], s["H"]),
                           "Cprev": f32(r, s["B"], s["H"]), "Wx": f32(r, 4, s["H"], s["I"]),
                           "Wh": f32(r, 4, s["H"], s["H"]), "bias": f32(r, 4, s["H"])},
        ref=lstm_ref),
    ("attention.tc", "attention"): dict(
        shapes=[dict(B=1, Tq=5, Tk=1, D=7, E=3), dict(B=3, Tq=1, Tk=11, D=1, E=13),
                dict(B=3, Tq=17, Tk=13, D=5, E=1)],
        make=lambda r, s: {"Q": f32(r, s["B"], s["Tq"], s["D"]),
                           "K": f32(r, s["B"], s["Tk"], s["D"]),
                           "V": f32(r, s["B"], s["Tk"], s["E"])},
        ref=attention_ref),
    ("attention_causal.tc", "attention_causal"): dict(
        shapes=[dict(B=1, Tq=5, Tk=1, D=7, E=3), dict(B=2, Tq=13, Tk=13, D=4, E=6),
                dict(B=3, Tq=17, Tk=29, D=5, E=1)],
        make=lambda r, s: {"Q": f32(r, s["B"], s["Tq"], s["D"]),
                           "K": f32(r, s["B"], s["Tk"], s["D"]),
                           "V": f32(r, s["B"], s["Tk"], s["E"])},
        ref=attention_causal_ref),
}

CASES = [pytest.param(key, i, id=f"{key[1]}-{i}")
         for key, spec in SPECS.items() for i in range(len(spec["shapes"]))]


def example_defs():
    """(file, def name) for every def in examples/*.tc."""
    found = []
    for path in sorted(EXAMPLES.glob("*.tc")):
        text = re.sub(r"#[^\n]*", "", path.read_text())
        found += [(path.name, m) for m in re.findall(r"\bdef\s+([A-Za-z_]\w*)", text)]
    return found


def test_every_example_def_is_tested():
    defs = example_defs()
    assert len(defs) >= 20, defs  # the seed's 13 + matmul, mv_init, 5 models
    missing = [d_ for d_ in defs if d_ not in SPECS]
    assert not missing, f"example defs without an end-to-end test: {missing}"
    for spec in SPECS.values():
        assert len(spec["shapes"]) >= 2


def compare(name, got, want, inputs):
    """`got` (float32 from the CLI) against the float64 reference."""
    ctx = f"output {name} for inputs [{describe(inputs)}]"
    assert got.dtype == np.float32, f"{ctx}: dtype {got.dtype}"
    assert got.shape == want.shape, f"{ctx}: shape {got.shape}, expected {want.shape}"
    assert not np.isnan(got).any(), f"{ctx}: NaN in the output"
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    err = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
    assert err <= 2e-5 * scale, f"{ctx}: max abs error {err:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("key,which", CASES)
def test_example(tmp_path, rng, key, which):
    file, entry = key
    spec = SPECS[key]
    sizes = spec["shapes"][which]
    inputs = spec["make"](rng, sizes)
    sets = spec["scalars"](rng) if "scalars" in spec else {}
    want = spec["ref"]({**{k: d(v) for k, v in inputs.items()}, **sets})
    res = run_tc(tmp_path, f"examples/{file}", inputs=inputs, sets=sets, outputs=list(want),
                 entry=entry)
    assert res.proc.stdout.startswith(f"{entry}:"), res.proc.stdout
    for name, ref in want.items():
        compare(name, res.outputs[name], ref, inputs)


def test_sgemm_gives_numpys_answer(tmp_path, rng):
    """The issue's acceptance line: `tessel run examples/sgemm.tc --input ...
    --output ...` gives NumPy's answer."""
    a, b, c = f32(rng, 37, 41), f32(rng, 41, 29), f32(rng, 37, 29)
    alpha, beta = 0.75, -1.25
    res = run_tc(tmp_path, "examples/sgemm.tc", inputs={"A": a, "B": b, "C": c},
                 sets={"alpha": alpha, "beta": beta}, outputs=["C"])
    want = beta * d(c) + alpha * (d(a) @ d(b))
    compare("C", res.outputs["C"], want, {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(res.outputs["C"], beta * c + alpha * (a @ b), rtol=1e-4, atol=1e-4)
