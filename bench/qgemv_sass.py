#!/usr/bin/env python3
"""qgemv_sass.py — SASS instructions per weight of the streaming quantized
GEMV's main loop (qmm_g0_qgemv_vec's `for q_s`), for each width that
bench/gpu_bench.c's bench_qmm_widths times. Needs no GPU: the kernel is
emitted as PTX by build/tessel, assembled by ptxas and disassembled by
nvdisasm (set NVDISASM if it is not on PATH: `pip download
nvidia-cuda-nvdisasm` and unzip the wheel). Run from the repository root:

    python3 bench/qgemv_sass.py [--arch sm_90a] [--mma] [--options K=V,...] [WIDTH ...]

--mma counts the tensor-core GEMV (qmm_g0_qgemv_mma, qmatmul.mma=2)
instead of the streaming one (qmatmul.mma=0); its largest loop is a
group's: with the steps unrolled (`for q_r ... unroll`) the count is the
group's, X's load and the scaling included; rolled, it is one load's
steps plus the group's scaling (an upper bound a step).

The loop is the largest one whose body loads from global memory and does
no shuffles; its hot path is the path through the body's blocks that
takes every wide (32-, 64-, 128-bit) load's fast form and skips the rest
where it can (the slow masked paths, and a group's scale step when a
group spans several steps: a lower bound there). Weights per iteration:
the q_q view's size over the block's threads (RI x BN / threads)."""
import collections, os, re, shutil, subprocess, sys, tempfile

WIDTHS = ["uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "uint8", "int4", "float6e3m2", "float8e4m3"]
SRC = "def qmm(float16(M,K) X, %s(K,N) W, float16(G,N) S) -> (Y) {\n  Y(m,n) +=! float16(W(k,n)) * S(k / 128, n) * X(m,k)\n}\n"
KERNEL = "qmm_g0_qgemv_vec"


def tool(name, env):
    p = os.environ.get(env) or shutil.which(name) or os.path.join("/usr/local/cuda/bin", name)
    return p


def hot_path(sass):
    ins, labels = [], {}
    for ln in sass.split("\n"):
        m = re.match(r"^(\.L_x_\d+):", ln)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?);", ln)
        if m:
            ins.append(m.group(2).strip())
    best = None
    for i, t in enumerate(ins):
        m = re.search(r"BRA.*`\((\.L_x_\d+)\)", t)
        if m and labels[m.group(1)] <= i:
            h = labels[m.group(1)]
            body = ins[h:i + 1]
            if not any("LDG" in b for b in body) or any("SHFL" in b for b in body):
                continue
            if best is None or i - h > best[1] - best[0]:
                best = (h, i)
    h, e = best
    starts = {h, e + 1} | {p for p in labels.values() if h <= p <= e}
    starts |= {i + 1 for i in range(h, e + 1) if "BRA" in ins[i] or "EXIT" in ins[i]}
    starts = sorted(s for s in starts if h <= s <= e + 1)
    blocks = list(zip(starts[:-1], starts[1:]))
    bidx = {s: k for k, (s, _) in enumerate(blocks)}
    wide = re.compile(r"(@!?U?P\d+ )?LDG\.E(\.64|\.128)?(\.CONSTANT)? ")
    n, INF = len(blocks), float("inf")
    dist, prev = [INF] * (n + 1), [None] * (n + 1)
    dist[0] = 0
    for k, (a, b) in enumerate(blocks):
        if dist[k] == INF:
            continue
        w = (b - a) - 1000 * sum(1 for i in range(a, b) if wide.match(ins[i]))
        last, succ = ins[b - 1], []
        m = re.search(r"BRA.*`\((\.L_x_\d+)\)", last)
        if b - 1 == e:
            succ = [n]
        elif m:
            t = labels[m.group(1)]
            succ.append(bidx[t] if h < t <= e else n)
            if last.startswith("@") or "BRA.DIV" in last:
                succ.append(k + 1 if k + 1 < n else n)
        else:
            succ.append(k + 1 if k + 1 < n else n)
        for s in succ:
            if s > k and dist[k] + w < dist[s]:
                dist[s], prev[s] = dist[k] + w, k
    path, k = [], n
    while prev[k] is not None:
        k = prev[k]
        path.append(k)
    return [ins[i] for k in reversed(path) for i in range(*blocks[k])]


def main():
    args = sys.argv[1:]
    arch, kernel, opts = "sm_90a", KERNEL, "qmatmul.mma=0"
    if args[:1] == ["--arch"]:
        arch, args = args[1], args[2:]
    if args[:1] == ["--mma"]:
        kernel, opts, args = "qmm_g0_qgemv_mma", "qmatmul.mma=2", args[1:]
    if args[:1] == ["--options"]:  # more options for the plan
        opts, args = opts + "," + args[1], args[2:]
    ptxas, nvdisasm = tool("ptxas", "PTXAS"), tool("nvdisasm", "NVDISASM")
    print("%-11s %6s %6s %5s %7s %9s  %s" % ("width", "regs", "spill", "w/it", "hot", "per w", "top opcodes"))
    with tempfile.TemporaryDirectory() as d:
        for w in args or WIDTHS:
            tc = os.path.join(d, w + ".tc")
            open(tc, "w").write(SRC % w)
            base = ["build/tessel", "compile", tc, "--target", "cuda", "--arch", arch, "--options", opts]
            tile = subprocess.run(base + ["--emit=tile"], capture_output=True, text=True).stdout
            ptx = subprocess.run(base + ["--emit=ptx", "--kernel", kernel], capture_output=True, text=True)
            if ptx.returncode:
                print("%-11s emit failed: %s" % (w, ptx.stderr.strip()[:100]))
                continue
            open(os.path.join(d, w + ".ptx"), "w").write(ptx.stdout)
            cub = os.path.join(d, w + ".cubin")
            pa = subprocess.run([ptxas, "-arch=" + arch, "-v", os.path.join(d, w + ".ptx"), "-o", cub],
                                capture_output=True, text=True).stderr
            regs = re.search(r"Used (\d+) registers", pa)
            spill = re.search(r"(\d+) bytes spill stores", pa)
            sass = subprocess.run([nvdisasm, "-c", cub], capture_output=True, text=True).stdout
            k = tile.split("kernel " + kernel)[1].split("\nkernel ")[0]
            th = int(re.search(r"threads\((\d+)\)", k).group(1))
            qs = re.findall(r"q_q\d* = view .* -> register \w+\[(\d+), (\d+)\]", k)
            # a ring of buffers (qmatmul.depth > 1): a group's steps written out
            wpt = sum(int(a) * int(b) for a, b in qs) // th
            un = re.search(r"for q_r in 0 : (\d+) unroll", k)
            if un:  # the steps of a group unrolled: the loop is the group's
                wpt *= int(un.group(1))
            hot = hot_path(sass)
            ops = collections.Counter(re.sub(r"^@!?U?P\w+ ", "", t).split()[0].split(".")[0] for t in hot)
            print("%-11s %6s %6s %5d %7d %9.2f  %s" % (w, regs.group(1) if regs else "?", spill.group(1) if spill else "?",
                                                     wpt, len(hot), len(hot) / wpt,
                                                     " ".join("%s:%d" % kv for kv in ops.most_common(6))))


if __name__ == "__main__":
    main()
