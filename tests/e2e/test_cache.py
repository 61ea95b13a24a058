"""The kernel cache through the CLI (src/runtime/cache.c, docs/tune.md):
16 processes on one empty cache, the cache deleted while runs are in
flight, damaged caches (each run right, each damage a warning), folders
that are not the user's own, and `tessel cache list|show|stats|export|
import|clear`. Every run is checked against the interpreter (--check) or
NumPy."""
import os
import sqlite3
import stat
import subprocess
import threading

import numpy as np
import pytest

from conftest import ROOT, TESSEL, run_cli, run_tc

# A program that compiles quickly: the point is the cache, not the kernel.
PROG = "def axpb(float(N) X, float(N) Y, float a) -> (Z) {\n  Z(i) = a * X(i) + Y(i)\n}\n"
PROG2 = "def rowsum(float(R,C) X) -> (S) {\n  S(r) +=! X(r,c)\n}\n"


def cache_env(d):
    return dict(os.environ, TESSEL_CACHE_DIR=str(d))


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def run_checked(prog, env, *extra):
    return subprocess.run([str(TESSEL), "run", str(prog), "--target", "cpu", "--check", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def checked_ok(proc):
    return proc.returncode == 0 and "FAILED" not in proc.stdout and ": ok" in proc.stdout


def rows(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT kind, key FROM entries_v1").fetchall()
    finally:
        con.close()


def test_16_processes_one_empty_cache(tmp_path):
    """16 runs of two programs at once on an empty cache: all right, no
    crash, one entry per key."""
    cache = tmp_path / "cache"
    p1, p2 = write(tmp_path, "a.tc", PROG), write(tmp_path, "b.tc", PROG2)
    env = cache_env(cache)
    procs = []
    for i in range(16):
        args = ([str(p1), "--size", f"N={1000 + i}", "--set", "a=0.5"] if i % 2 else
                [str(p2), "--size", f"R={3 + i}", "--size", f"C={257 + i}"])
        procs.append(subprocess.Popen([str(TESSEL), "run", *args, "--target", "cpu", "--check"], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]
    for rc, out, err in results:
        assert rc == 0 and ": ok" in out and "FAILED" not in out, (rc, out, err)
        assert "warning" not in err, err
    keys = rows(cache / "tessel-v1.db")
    assert len(keys) == len(set(keys)), keys
    kinds = [k for k, _ in keys]
    assert kinds.count("exe") == 2 and kinds.count("cpu") == 2, keys


def test_cache_deleted_while_runs_are_in_flight(tmp_path):
    """rm -rf of the cache folder, over and over, while 12 runs go: every
    run succeeds and is right."""
    cache = tmp_path / "cache"
    prog = write(tmp_path, "a.tc", PROG)
    env = cache_env(cache)
    stop = threading.Event()

    def remover():
        while not stop.is_set():
            subprocess.run(["rm", "-rf", str(cache)])

    t = threading.Thread(target=remover)
    t.start()
    try:
        procs = [subprocess.Popen([str(TESSEL), "run", str(prog), "--size", f"N={500 + i}", "--set", "a=2",
                                   "--target", "cpu", "--check"], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for i in range(12)]
        results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]
    finally:
        stop.set()
        t.join()
    for rc, out, err in results:
        assert rc == 0 and ": ok" in out, (rc, out, err)


def damage(db, kind, rng):
    if kind == "flip":
        data = bytearray(db.read_bytes())
        for _ in range(rng.integers(1, 20)):
            data[rng.integers(0, len(data))] ^= 1 << int(rng.integers(0, 8))
        db.write_bytes(bytes(data))
    elif kind == "truncate":
        data = db.read_bytes()
        db.write_bytes(data[:rng.integers(0, len(data))])
    elif kind == "directory":
        db.unlink()
        db.mkdir()
    elif kind == "fifo":
        db.unlink()
        os.mkfifo(db)
    elif kind == "blob":
        con = sqlite3.connect(db)
        con.execute("UPDATE entries_v1 SET data = substr(data, 1, 100) || x'00' || substr(data, 102) "
                    "WHERE kind IN ('cpu', 'exe')")
        con.commit()
        con.close()
    elif kind == "writable":
        db.chmod(0o666)


@pytest.mark.parametrize("kind", ["flip", "truncate", "directory", "fifo", "blob", "writable"])
def test_damaged_cache_runs_right_and_warns(tmp_path, kind):
    """Each kind of damage, a few times over: the run is right (--check),
    and says so on stderr when the cache could not serve it."""
    cache = tmp_path / "cache"
    prog = write(tmp_path, "a.tc", PROG)
    env = cache_env(cache)
    first = run_checked(prog, env, "--size", "N=777", "--set", "a=1.5")
    assert checked_ok(first), first.stdout + first.stderr
    db = cache / "tessel-v1.db"
    rng = np.random.default_rng()
    for _ in range(4):
        damage(db, kind, rng)
        proc = run_checked(prog, env, "--size", f"N={rng.integers(1, 3000)}", "--set", "a=-0.25")
        assert checked_ok(proc), proc.stdout + proc.stderr
        # damage the run had to read past is a warning (flipped bytes or a
        # cut may land where nothing is read: the pages then come from the WAL)
        if kind in ("directory", "fifo", "blob", "writable"):
            assert "tessel: warning:" in proc.stderr, (kind, proc.stderr)
        assert "Traceback" not in proc.stderr and "Segmentation" not in proc.stderr


def test_folder_not_ours_is_refused(tmp_path):
    """A cache folder others may write to (or another user owns) is not
    used: a clear warning, and the run is still right."""
    bad = tmp_path / "shared"
    bad.mkdir()
    bad.chmod(0o777)
    prog = write(tmp_path, "a.tc", PROG)
    proc = run_checked(prog, cache_env(bad), "--size", "N=100", "--set", "a=3")
    assert checked_ok(proc), proc.stdout + proc.stderr
    assert "others may write to it (mode 777)" in proc.stderr, proc.stderr
    assert not (bad / "tessel-v1.db").exists()
    if os.geteuid() == 0:  # root can hand the folder to someone else
        other = tmp_path / "other"
        other.mkdir(mode=0o700)
        os.chown(other, 65534, 65534)
        proc = run_checked(prog, cache_env(other), "--size", "N=100", "--set", "a=3")
        assert checked_ok(proc), proc.stdout + proc.stderr
        assert "belongs to uid 65534" in proc.stderr, proc.stderr


def test_no_home_falls_back_to_a_private_tmp_folder(tmp_path):
    """HOME and the cache variables unset: /tmp/tessel-$UID, created 0700."""
    prog = write(tmp_path, "a.tc", PROG)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "TESSEL_CACHE_DIR")}
    proc = run_checked(prog, env, "--size", "N=10", "--set", "a=1")
    assert checked_ok(proc), proc.stdout + proc.stderr
    st = os.stat(f"/tmp/tessel-{os.getuid()}")
    assert stat.S_ISDIR(st.st_mode) and (st.st_mode & 0o077) == 0 and st.st_uid == os.getuid()


def test_cache_commands(tmp_path):
    cache = tmp_path / "cache"
    prog = write(tmp_path, "a.tc", PROG)
    env = cache_env(cache)
    assert checked_ok(run_checked(prog, env, "--size", "N=50", "--set", "a=1"))
    lst = run_cli("cache", "list", env=env)
    assert lst.returncode == 0 and "exe" in lst.stdout and "axpb" in lst.stdout, lst.stdout
    key = next(l.split()[1] for l in lst.stdout.splitlines() if l.startswith("exe"))
    show = run_cli("cache", "show", key, env=env)
    assert show.returncode == 0 and "intact   yes" in show.stdout and "launch 0" in show.stdout, show.stdout
    assert "v0(" in show.stdout  # the canonical, alpha-renamed program
    stats = run_cli("cache", "stats", env=env)
    assert stats.returncode == 0 and "entries" in stats.stdout
    out = tmp_path / "export.db"
    exp = run_cli("cache", "export", str(out), "--kind", "exe", env=env)
    assert exp.returncode == 0 and "exported 1 entry" in exp.stdout, exp.stdout + exp.stderr
    clr = run_cli("cache", "clear", env=env)
    assert clr.returncode == 0 and "removed" in clr.stdout
    assert "no entries" in run_cli("cache", "list", env=env).stdout
    imp = run_cli("cache", "import", str(out), env=env)
    assert imp.returncode == 0 and "imported 1 entry" in imp.stdout, imp.stdout + imp.stderr
    assert key in run_cli("cache", "list", env=env).stdout
    # a renamed program (names, whitespace, comments) shares the entry
    renamed = write(tmp_path, "b.tc", "# the same maths\ndef f(float(M) P,float(M) Q,float s)->(R){R(j)=s*P(j)+Q(j)}\n")
    assert checked_ok(run_checked(renamed, env, "--size", "M=60", "--set", "s=2"))
    kinds = [k for k, _ in rows(cache / "tessel-v1.db")]
    assert kinds.count("exe") == 1, kinds
    bad = run_cli("cache", "show", "zzzz", env=env)
    assert bad.returncode == 1 and "no entry" in bad.stderr
    assert run_cli("cache", "frobnicate", env=env).returncode == 2
