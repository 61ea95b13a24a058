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
