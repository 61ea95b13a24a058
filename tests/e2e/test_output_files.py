"""Output files are never lost (issue 11, class 12): `--output` is written
to a temporary file beside its path and renamed over it, so a write that
fails (here: a file-size limit, as a full disk would) leaves the user's
existing file whole and no partial file behind; an output path that is an
input's file, or two outputs in one file, is an error before anything
runs. For `tessel run` and `tessel tile run`."""
import os
import resource
import signal
import subprocess

import numpy as np
import pytest

from conftest import ROOT, TESSEL

PROG = """def f(float(N) A) -> (B, C) {
  B(i) = A(i) * 2
  C(i) = A(i) + 1
}
"""

TILE = """kernel k(A: global f32[M], B: global f32[M]) grid(cdiv(M, 32)) threads(32) {
  x = load_global A[block_idx.x * 32] -> register f32[32] layout spatial(32)
  store_global x -> B[block_idx.x * 32]
}
"""


def limited(max_bytes):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return pre


def tessel(*args, pre=None):
    return subprocess.run([str(TESSEL), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, preexec_fn=pre)


@pytest.mark.parametrize("n", [1, 50021])
def test_failed_write_keeps_the_old_file(tmp_path, rng, n):
    (tmp_path / "f.tc").write_text(PROG)
    a = rng.uniform(-1, 1, size=n).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    old = rng.bytes(777)
    (tmp_path / "b.npy").write_bytes(old)
    res = tessel("run", tmp_path / "f.tc", "--target", "interp", "--input", f"A={tmp_path / 'a.npy'}",
                 "--output", f"B={tmp_path / 'b.npy'}", pre=limited(64 * 1024))
    if n == 1:  # small enough: written, and replaced whole
        assert res.returncode == 0, res.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), a * 2)
    else:
        assert res.returncode == 1, res.stdout + res.stderr
        assert f"cannot write '{tmp_path / 'b.npy'}': File too large (the file there is unchanged)" in res.stderr
        assert (tmp_path / "b.npy").read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "f.tc"]


def test_tile_run_failed_write_keeps_the_old_file(tmp_path, rng):
    (tmp_path / "k.tile").write_text(TILE)
    a = rng.uniform(-1, 1, size=40009).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    old = rng.bytes(999)
    (tmp_path / "b.npy").write_bytes(old)
    res = tessel("tile", "run", tmp_path / "k.tile", "--input", f"A={tmp_path / 'a.npy'}", "--output",
                 f"B={tmp_path / 'b.npy'}", pre=limited(64 * 1024))
    assert res.returncode == 1
    assert (tmp_path / "b.npy").read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "k.tile"]
    res = tessel("tile", "run", tmp_path / "k.tile", "--input", f"A={tmp_path / 'a.npy'}", "--output",
                 f"B={tmp_path / 'b.npy'}")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), a)


def test_output_keeps_mode_and_follows_links(tmp_path, rng):
    (tmp_path / "f.tc").write_text(PROG)
    a = rng.uniform(-1, 1, size=13).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    (tmp_path / "real.npy").write_bytes(b"x")
    os.chmod(tmp_path / "real.npy", 0o640)
    os.symlink("real.npy", tmp_path / "link.npy")
    res = tessel("run", tmp_path / "f.tc", "--input", f"A={tmp_path / 'a.npy'}", "--output",
                 f"B={tmp_path / 'link.npy'}", "--output", "C=/dev/null")
    assert res.returncode == 0, res.stderr
    assert os.path.islink(tmp_path / "link.npy")
    assert os.stat(tmp_path / "real.npy").st_mode & 0o777 == 0o640
    np.testing.assert_array_equal(np.load(tmp_path / "real.npy"), a * 2)


@pytest.mark.parametrize("cmd", ["run", "tile"])
def test_output_over_an_input_is_refused(tmp_path, rng, cmd):
    a = rng.uniform(-1, 1, size=17).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    before = (tmp_path / "a.npy").read_bytes()
    other = tmp_path / "sub" / ".." / "a.npy"
    (tmp_path / "sub").mkdir()
    if cmd == "run":
        (tmp_path / "f.tc").write_text(PROG)
        res = tessel("run", tmp_path / "f.tc", "--input", f"A={tmp_path / 'a.npy'}", "--output", f"B={other}")
        want = f"--output B={other} is the file of --input A={tmp_path / 'a.npy'}"
    else:
        (tmp_path / "k.tile").write_text(TILE)
        res = tessel("tile", "run", tmp_path / "k.tile", "--input", f"A={tmp_path / 'a.npy'}", "--output",
                     f"B={other}")
        want = f"--output B={other} is the file of --input A={tmp_path / 'a.npy'}"
    assert res.returncode == 1 and want in res.stderr, res.stderr
    assert (tmp_path / "a.npy").read_bytes() == before


def test_two_outputs_in_one_file_are_refused(tmp_path, rng):
    (tmp_path / "f.tc").write_text(PROG)
    np.save(tmp_path / "a.npy", rng.uniform(-1, 1, size=5).astype(np.float32))
    res = tessel("run", tmp_path / "f.tc", "--input", f"A={tmp_path / 'a.npy'}", "--output",
                 f"B={tmp_path / 'o.npy'}", "--output", f"C={tmp_path / 'o.npy'}")
    assert res.returncode == 1
    assert f"--output B={tmp_path / 'o.npy'} and --output C={tmp_path / 'o.npy'} are one file" in res.stderr
    assert not (tmp_path / "o.npy").exists()


def test_tile_run_duplicate_input_is_refused(tmp_path, rng):
    (tmp_path / "k.tile").write_text(TILE)
    np.save(tmp_path / "a.npy", rng.uniform(-1, 1, size=5).astype(np.float32))
    res = tessel("tile", "run", tmp_path / "k.tile", "--input", f"A={tmp_path / 'a.npy'}", "--input",
                 f"A={tmp_path / 'a.npy'}", "--output", f"B={tmp_path / 'b.npy'}")
    assert res.returncode == 1 and "--input A given twice" in res.stderr, res.stderr
