#!/usr/bin/env python3
"""contract_tile_dump.py — `tessel compile --emit=tile` for a matrix of
contraction programs x shapes x dtypes x targets, one file per cell, so a
change to the contraction strategy (src/sched/contract.c) can be shown to
leave its tile IR unchanged:

    python3 scripts/contract_tile_dump.py OUT_BEFORE   # on the old build
    python3 scripts/contract_tile_dump.py OUT_AFTER    # on the new build
    diff -r OUT_BEFORE OUT_AFTER

The tile IR and launch plan fix what the GPU runs (the generators are
deterministic functions of it), so identical dumps mean identical kernels.

Programs: plain, A transposed, B transposed, both, batched, with an init
op (bias) and epilogue ops (relu, tanh, scale), C read before (+= without
!), scalar parameters (sgemm alpha/beta), a float() cast of the reads.
Shapes: symbolic sizes, and constant ones (1, primes, tile multiples,
16x8192x8192). Dtypes f16, bf16, f32. Targets: cpu, cuda sm_80, cuda
sm_90a; also a few --options plans. Usage: contract_tile_dump.py OUT
[--tessel PATH]."""
import os
import re
import subprocess
import sys

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float"}

# name -> (A dims, B dims, C index, body); M, N, K, B are the size names.
FORMS = {
    "nn": ("M,K", "K,N", "C(m,n) +=! A(m,k) * B(k,n)"),
    "nt": ("M,K", "N,K", "C(m,n) +=! A(m,k) * B(n,k)"),
    "tn": ("K,M", "K,N", "C(m,n) +=! A(k,m) * B(k,n)"),
    "tt": ("K,M", "N,K", "C(m,n) +=! A(k,m) * B(n,k)"),
    "bnn": ("Bt,M,K", "Bt,K,N", "C(b,m,n) +=! A(b,m,k) * B(b,k,n)"),
    "bnt": ("Bt,M,K", "Bt,N,K", "C(b,m,n) +=! A(b,m,k) * B(b,n,k)"),
}

# Shapes: None = symbolic; else (M, N, K, Bt).
SHAPES = {
    "sym": None,
    "1x1x1": (1, 1, 1, 1),
    "1x8192x8192": (1, 8192, 8192, 2),
    "16x8192x8192": (16, 8192, 8192, 2),
    "67x45x41": (67, 45, 41, 3),
    "128x256x64": (128, 256, 64, 4),
    "129x257x33": (129, 257, 33, 1),
    "4096x4096x4096": (4096, 4096, 4096, 2),
}

TARGETS = [
    ("cpu", ["--target", "cpu"]),
    ("sm80", ["--target", "cuda", "--arch", "sm_80"]),
    ("sm90a", ["--target", "cuda", "--arch", "sm_90a"]),
]


def dims(spec, shape):
    if shape is None:
        return spec
    m, n, k, bt = shape
    val = {"M": m, "N": n, "K": k, "Bt": bt}
    return ",".join(str(val[d]) for d in spec.split(","))


def program(form, dt, shape, variant):
    a, b, body = FORMS[form]
    t = DTYPES[dt]
    lhs = body.split(" +=")[0]
    idx = lhs[2:-1]
    cdims = ",".join(d for d in (["Bt"] if form.startswith("b") else []) + ["M", "N"])
    params = [f"{t}({dims(a, shape)}) A", f"{t}({dims(b, shape)}) B"]
    stmts = []
    if variant == "plain":
        stmts = [body]
    elif variant == "cast":
        stmts = [re.sub(r"(A\([^)]*\)) \* (B\([^)]*\))", r"float(\1) * float(\2)", body)]
    elif variant == "epi":  # bias init, relu and scale epilogue
        params.append(f"{t}({dims('N', shape)}) bias")
        n = idx.split(",")[-1]
        stmts = [f"{lhs} = bias({n})", body.replace("+=!", "+="), f"{lhs} = fmaxf({lhs}, 0) * 0.5",
                 f"{lhs} = tanh({lhs} + 1)"]
    elif variant == "scal":  # sgemm: C in/out, alpha, beta
        params = ["float alpha", "float beta"] + params + [f"{t}({dims(cdims, shape)}) C"]
        stmts = [f"{lhs} = beta * {lhs}", body.replace("+=!", "+=").replace("A(", "alpha * A(", 1)]
    outs = "C"
    return f"def g({', '.join(params)}) -> ({outs}) {{\n" + "".join(f"  {s}\n" for s in stmts) + "}\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    tessel = "build/tessel"
    if "--tessel" in sys.argv:
        tessel = sys.argv[sys.argv.index("--tessel") + 1]
    os.makedirs(out, exist_ok=True)
    cells = []
    for form in FORMS:
        for dt in DTYPES:
            for shape in SHAPES:
                for variant in ("plain", "cast", "epi", "scal"):
                    if variant == "cast" and dt == "f32":
                        continue
                    if variant in ("epi", "scal") and shape not in ("sym", "67x45x41", "16x8192x8192"):
                        continue
                    cells.append((form, dt, shape, variant))
    extra = [  # option plans: other tile shapes, stages, micro-kernels off
        ("opt1", ["--options", "contract.mma.bm=64,contract.mma.bn=64,contract.mma.wm=2,contract.mma.wn=2"]),
        ("opt2", ["--options", "contract.fma.bm=64,contract.fma.bn=64,contract.fma.stages=2"]),
        ("opt3", ["--options", "contract.cpu.bm=48,contract.cpu.bn=64,contract.cpu.tm=6,contract.cpu.tn=16,"
                               "cpu.micro_kernels=0"]),
    ]
    src_dir = os.path.join(out, "src")
    os.makedirs(src_dir, exist_ok=True)
    n = fails = 0
    for form, dt, shape, variant in cells:
        text = program(form, dt, SHAPES[shape], variant)
        name = f"{form}-{dt}-{shape}-{variant}"
        path = os.path.join(src_dir, name + ".tc")
        with open(path, "w") as f:
            f.write(text)
        runs = [(tn, ta) for tn, ta in TARGETS]
        if shape == "sym":
            runs += [(tn + "-" + on, ta + oa) for tn, ta in TARGETS for on, oa in extra]
        for tn, ta in runs:
            r = subprocess.run([tessel, "compile", path, "--emit=tile"] + ta, capture_output=True, text=True)
            with open(os.path.join(out, f"{name}.{tn}.tile"), "w") as f:
                f.write(r.stdout)
                if r.returncode:
                    f.write(f"// exit {r.returncode}\n{r.stderr}")
                    fails += 1
            n += 1
    print(f"{n} dumps in {out} ({fails} compile errors recorded in their files)")


if __name__ == "__main__":
    main()
