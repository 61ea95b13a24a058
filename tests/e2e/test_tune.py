"""`tessel tune` and `tessel bench` through the CLI (docs/tune.md): a short
CPU tuning session records its best and a later `tessel run` uses it,
says so and is right (--check against the interpreter); `tessel bench`
checks before it times and prints its figures; bad options are usage
errors. The CUDA form (two workers on device ordinals 0,0: one GPU serves
both) runs only where a GPU is present."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, TESSEL, run_cli

MM = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n"
SIZES = ["--size", "M=67", "--size", "K=131", "--size", "N=45"]


def env_for(d):
    return dict(os.environ, TESSEL_CACHE_DIR=str(d))


def tessel(env, *args, timeout=300):
    return subprocess.run([str(TESSEL), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_tune_records_and_run_uses_it(tmp_path):
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    env = env_for(tmp_path / "cache")
    p = tessel(env, "tune", prog, "--target", "cpu", *SIZES, "--generations", "2", "--population", "4",
               "--budget", "120s", "--seed", "5")
    assert p.returncode == 0, p.stderr
    assert "generation 1/2" in p.stderr and "generation 2/2" in p.stderr, p.stderr
    m = re.search(r"tuned mm on cpu: best ([0-9.]+) ms, ([0-9.]+)x the default \(([0-9.]+) ms\); (\d+) tried",
                  p.stdout)
    assert m, p.stdout
    best, default = float(m.group(1)), float(m.group(3))
    assert 0 < best <= default and 5 <= int(m.group(4)) <= 8
    assert "recorded" in p.stdout
    opts = re.search(r"^options: (.*)$", p.stdout, re.M).group(1)
    r = tessel(env, "run", prog, "--target", "cpu", *SIZES, "--check")
    assert r.returncode == 0 and "check C:" in r.stdout and ": ok" in r.stdout, r.stdout + r.stderr
    if opts.startswith("(the defaults"):
        assert "tuned" not in r.stdout
    else:
        assert f"options: {opts} (tuned" in r.stdout, r.stdout
    # other shapes: no record, the defaults
    r = tessel(env, "run", prog, "--target", "cpu", "--size", "M=5", "--size", "K=7", "--size", "N=3", "--check")
    assert r.returncode == 0 and "tuned" not in r.stdout and ": ok" in r.stdout, r.stdout + r.stderr
    listed = tessel(env, "cache", "list", "--kind", "tuned")
    assert listed.returncode == 0 and "mm" in listed.stdout, listed.stdout + listed.stderr
    # the record against the defaults, interleaved
    c = tessel(env, "bench", prog, "--target", "cpu", *SIZES, "--compare", "default", "tuned", "--rounds", "5",
               "--budget", "0.2")
    assert c.returncode == 0, c.stderr
    assert "B options   " + (opts if not opts.startswith("(the defaults") else "(the defaults)") in c.stdout, c.stdout
    assert "(tuned: the record `tessel tune` made for these shapes)" in c.stdout, c.stdout


COMPARE_LINES = re.compile(
    r"check +ok: max error ([0-9.e+-]+) \(A\), ([0-9.e+-]+) \(B\) of the tolerance \(at these sizes\)\n"
    r"  A +median ([0-9.]+) ms .*; (\d+) runs\)\n"
    r"  A options +(.*)\n"
    r"  B +median ([0-9.]+) ms .*; (\d+) runs\)\n"
    r"  B options +(.*)\n"
    r"  A/B +([0-9.]+)x .*\n"
    r"  rounds +A/B per round: median ([0-9.]+)x, min ([0-9.]+)x, max ([0-9.]+)x \((\d+) rounds over \d+ input sets?\)\n"
    r"  interval +([0-9.]+)x \.\. ([0-9.]+)x +\(([0-9.]+)% for the rounds' median\): (.*)\n")


def test_bench_compare_two_plans(tmp_path):
    """Two real CPU plans (different contract.cpu tiles) against each other:
    both checked, the rounds asked for, consistent figures; usage errors."""
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    env = env_for(tmp_path / "cache")
    tiles = "contract.cpu.bm=48,contract.cpu.bn=64,contract.cpu.tm=4,contract.cpu.tn=8"
    p = tessel(env, "bench", prog, "--target", "cpu", *SIZES, "--compare", "default", tiles, "--rounds", "6",
               "--budget", "0.3")
    assert p.returncode == 0, p.stderr
    assert "mm: A(67,131) float32, B(131,45) float32 on cpu: A against B, 6 alternating rounds" in p.stdout, p.stdout
    m = COMPARE_LINES.search(p.stdout)
    assert m, p.stdout
    err_a, err_b, med_a, runs_a, opt_a, med_b, runs_b, opt_b = m.group(1, 2, 3, 4, 5, 6, 7, 8)
    assert float(err_a) <= 1 and float(err_b) <= 1
    assert opt_a == "(the defaults)" and opt_b == tiles
    assert int(runs_a) >= 18 and int(runs_b) >= 18
    ratio, rmed, rmin, rmax, rounds, lo, hi, cov = map(float, m.group(9, 10, 11, 12, 13, 14, 15, 16))
    assert int(rounds) == 6 and abs(cov - 96.9) < 0.1
    assert abs(ratio - float(med_a) / float(med_b)) <= 0.002 * ratio + 1e-3
    assert rmin <= lo <= rmed <= hi <= rmax
    verdict = m.group(17)  # (the bounds are printed rounded: judge only those clear of 1)
    if lo > 1.001:
        assert verdict == "B is faster", p.stdout
    elif hi < 0.999:
        assert verdict == "A is faster", p.stdout
    elif lo < 0.999 and hi > 1.001:
        assert verdict == "no difference beyond the noise", p.stdout
    # no record yet: "tuned" is an error naming the side
    q = tessel(env, "bench", prog, "--target", "cpu", *SIZES, "--compare", "tuned", "default", "--budget", "0.1")
    assert q.returncode == 1 and "A: no tuning record of mm" in q.stderr, q.stderr


@pytest.mark.parametrize("args,want", [
    (["--compare", "default"], "--compare needs two option sets A and B, found only 'default'"),
    (["--compare", "default", "--target", "cpu"], "two option sets A and B, found only 'default' before --target"),
    (["--compare", "--rounds", "3", "default", "tuned"], "two option sets A and B, found none before --rounds"),
    (["--rounds", "4"], "--rounds is for --compare"),
    (["--compare", "default", "default", "--rounds", "0"], "--rounds takes 1..1000"),
    (["--compare", "default", "default", "--options", "cpu.threads=1"], "give the options in --compare"),
    (["--compare", "default", "contract.cpu.bm=7"], "B: option contract.cpu.bm=7"),
])
def test_bench_compare_usage_errors(tmp_path, args, want):
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    p = tessel(env_for(tmp_path / "cache"), "bench", prog, "--target", "cpu", *SIZES, *args)
    assert p.returncode in (1, 2) and want in p.stderr, p.stderr


def test_bench_prints_checked_figures(tmp_path):
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    env = env_for(tmp_path / "cache")
    p = tessel(env, "bench", prog, "--target", "cpu", *SIZES, "--budget", "0.2")
    assert p.returncode == 0, p.stderr
    assert re.search(r"check +ok: max error [0-9.e+-]+ of the tolerance \(at these sizes\)", p.stdout), p.stdout
    med = float(re.search(r"median +([0-9.]+) ms", p.stdout).group(1))
    gflop = float(re.search(r"\(([0-9.e+-]+) GFLOP\)", p.stdout).group(1))
    assert med > 0 and abs(gflop - 2 * 67 * 131 * 45 * 1e-9) < 1e-6
    assert re.search(r"compile +cold [0-9.]+ ms; from the cache [0-9.]+ ms", p.stdout), p.stdout
    assert "options     (the defaults)" in p.stdout


@pytest.mark.parametrize("args,want", [
    (["--budget", "soon"], "--budget takes a duration"),
    (["--generations", "0"], "--generations takes"),
    (["--search", "annealing"], "--search takes genetic or random"),
    (["--devices", "0,x"], "--devices takes"),
    (["--target", "interp"], "not a compiled target"),
    (["--target", "cpu", "--devices", "0,0"], "--devices is for --target cuda"),
])
def test_tune_usage_errors(tmp_path, args, want):
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    p = tessel(env_for(tmp_path / "cache"), "tune", prog, *SIZES, *args)
    assert p.returncode == 2 and want in p.stderr, p.stderr


def test_tune_space_lists_the_options():
    p = run_cli("tune", "--space")
    assert p.returncode == 0 and "contract.cpu.bm" in p.stdout and "contract.mma.stages" in p.stdout


@pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="no GPU here")
def test_tune_two_workers_on_one_gpu(tmp_path):
    prog = tmp_path / "mm.tc"
    prog.write_text(MM)
    env = env_for(tmp_path / "cache")
    p = tessel(env, "tune", prog, "--target", "cuda", *SIZES, "--devices", "0,0", "--generations", "2",
               "--population", "6", "--budget", "240s", timeout=600)
    assert p.returncode == 0, p.stderr
    m = re.search(r"worker 0 \(gpu 0\) (\d+); worker 1 \(gpu 0\) (\d+);", p.stdout)
    assert m and int(m.group(1)) >= 1 and int(m.group(2)) >= 1, p.stdout
    assert "gpu0:" in p.stderr, p.stderr
