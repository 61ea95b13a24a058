"""report.py — one table from one GPU run: tessel's figures (bench/gpu_bench.c
--json) beside PyTorch's (bench/anchors.py --json) for the same work on the
same machine, with the ratio of rates (> 1: tessel faster), the share of the
measured device-to-device copy bandwidth for the memory-bound rows, and the
two latencies of issue 4 (cold NVRTC compile of one kernel, overhead of a
cached run). Prints the markdown and writes it to OUT_DIR/gpu-DATE-DEVICE.md
(for bench/results/). Either input may be missing: its columns say so.

    python3 bench/report.py --tessel OUT/tessel.json --anchors OUT/anchors.json --out-dir OUT
"""
import argparse
import datetime
import json
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"report: cannot read {path}: {e}", file=sys.stderr)
        return None


def base(work):
    """'GEMM fp16 4096^3 (cuBLAS)' -> 'GEMM fp16 4096^3'."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", work).strip()


def fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def build(tessel, anchors, failed):
    dev = (tessel or {}).get("device") or (anchors or {}).get("device") or "unknown device"
    date = datetime.date.today().isoformat()
    arows = {base(r["work"]): r for r in (anchors or {}).get("rows", [])}
    copy = arows.get("copy d2d 1 GiB") or next((r for k, r in arows.items() if k.startswith("copy d2d")), None)
    # same-size copies: "copy d2d fp16 12288x1024" serves every row whose name ends in 12288x1024
    sized = {k.split()[-1]: r for k, r in arows.items() if k.startswith("copy d2d fp16 ")}
    lines = [f"# GPU benchmarks — {dev}, {date}", ""]
    lines.append("Produced by `bench/gpu.sh` in one run: tessel (`bench/gpu_bench.c`, generic strategies of "
                 "issue 4; every row checked against a reference before it was timed; CUDA events, median, "
                 "inputs rotated past L2) beside PyTorch on the same machine (`bench/anchors.py`).")
    if tessel and tessel.get("quick"):
        lines += ["", "**--quick sizes: a smoke run, not the benchmark.**"]
    if anchors:
        lines += ["", f"PyTorch {anchors.get('torch', '?')}."]
    if copy:
        lines += [f"Measured device-to-device copy: {copy['rate']:.2f} TB/s (bytes read + written)."]
    for size, r in sized.items():
        lines += [f"A copy of {size} fp16 (sources rotated past L2): {r['rate']:.2f} TB/s."]
    lines += ["", "| work | tessel | tessel check | PyTorch | PyTorch check | tessel / PyTorch | % of copy bw "
              "| % of a copy of its size |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    seen = set()
    for r in (tessel or {}).get("rows", []):
        k = base(r["work"])
        seen.add(k)
        a = arows.get(k)
        ok = r.get("ok", 0) and r.get("median_s", 0) > 0
        t = f"{r['rate']:.3f} {r['unit']} ({r['median_s'] * 1e3:.3f} ms)" if ok else "—"
        p = f"{a['rate']:.3f} {a['unit']} ({a['median_s'] * 1e3:.3f} ms)" if a else "—"
        ratio = r["rate"] / a["rate"] if ok and a and a["rate"] > 0 and a["unit"] == r["unit"] else None
        bw = 100 * r["rate"] / copy["rate"] if ok and copy and r["unit"] == "TB/s" and copy["rate"] > 0 else None
        sc = sized.get(k.split()[-1])
        sbw = 100 * r["rate"] / sc["rate"] if ok and sc and r["unit"] == "TB/s" and sc["rate"] > 0 else None
        lines.append(f"| {k} | {t} | {r.get('check', '')} | {p} | {a['check'] if a else '—'} | "
                     f"{fmt(ratio, '.3f')} | {fmt(bw, '.0f')} | {fmt(sbw, '.0f')} |")
    for k, a in arows.items():
        if k in seen or k.startswith("copy d2d"):
            continue
        lines.append(f"| {k} | — | not run | {a['rate']:.3f} {a['unit']} ({a['median_s'] * 1e3:.3f} ms) | "
                     f"{a['check']} | — | — | — |")
    lines.append("")
    if tessel:
        cold = tessel.get("cold_compile_ms")
        wall, devms = tessel.get("cached_run_ms"), tessel.get("cached_run_device_ms")
        over = wall - devms if wall is not None and devms is not None and wall >= 0 and devms >= 0 else None
        lines += ["| latency | measured | issue 4 target |", "| --- | --- | --- |",
                  f"| cold NVRTC compile of one kernel ({tessel.get('arch', '?')}), median of 3 | {fmt(cold, '.1f')} ms | < 1000 ms |",
                  f"| cached `tsl_program_run`, matmul fp32 64^3, minus its device time | {fmt(over, '.2f')} ms "
                  f"({fmt(wall, '.2f')} end to end) | < 5 ms |", ""]
    else:
        lines += ["tessel's figures are missing (gpu_bench did not produce tessel.json).", ""]
    if failed:
        lines += [f"Steps of gpu.sh that failed or were skipped: {failed}.", ""]
    return dev, date, "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessel")
    ap.add_argument("--anchors")
    ap.add_argument("--out-dir")
    ap.add_argument("--failed", default="")
    args = ap.parse_args()
    tessel = load(args.tessel) if args.tessel else None
    anchors = load(args.anchors) if args.anchors else None
    dev, date, md = build(tessel, anchors, args.failed.strip())
    print(md)
    if args.out_dir:
        name = re.sub(r"[^A-Za-z0-9]+", "-", dev).strip("-") or "gpu"
        path = f"{args.out_dir}/gpu-{date}-{name}.md"
        with open(path, "w") as f:
            f.write(md)
        print(f"written: {path}")
    return 0 if tessel and anchors else 1


if __name__ == "__main__":
    sys.exit(main())
