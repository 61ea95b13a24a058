#!/usr/bin/env python3
"""run.py [TESSEL] [SUBSTR...] -- the hostile-input corpus (tests/hostile/).

Each file is one hostile input: a .tc or .tile program (or a .txt for
cases that need no program). Its leading comment lines (`#` or `//`) say
how to run it and what must happen:

  # class: N -- what is hostile here        (issue 11's class; required)
  # run: ARGS                               tessel ARGS ({file}, {tmp}, {root})
  # expect: FRAGMENT                        stderr+stdout must contain it (repeatable)
  # reject: FRAGMENT                        ... and must not contain it (repeatable)
  # exit: N                                 the exit status (default 1)
  # env: NAME=VALUE                         extra environment (repeatable)
  # setup: SHELL                            run first, in {tmp} (repeatable)
  # check: SHELL                            run after, in {tmp}; must exit 0
  # wrap: COMMAND                           run tessel under it (sh -c '...' sh)
  # timeout: SECONDS                        default 60
  # repeat N: TEXT                          the line becomes N lines, {i} = 1..N,
                                            {p} = i - 1 (generated programs)

Every case runs under a timeout (a hang fails it) with the binary given
(the test command passes build-asan/tessel); any sanitizer report, internal
error or signal fails it whatever the exit status. Prints one line per
case and ends with `N passed, N failed`.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "hostile"
KEYS = ("class", "run", "expect", "reject", "exit", "env", "setup", "check", "timeout", "wrap")
BAD = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "internal error",
       "Segmentation fault", "Aborted")


def parse(path):
    """(directives, program text with repeats expanded)."""
    meta = {k: [] for k in KEYS}
    out = []
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(?:#|//)\s*repeat\s+(\d+)\s*:\s?(.*)$", line)
        if m:
            n, tmpl = int(m.group(1)), m.group(2)
            out.extend(tmpl.replace("{i}", str(i)).replace("{p}", str(i - 1))
                       for i in range(1, n + 1))
            continue
        m = re.match(r"\s*(?:#|//)\s*(" + "|".join(KEYS) + r")\s*:\s?(.*)$", line)
        if m:
            meta[m.group(1)].append(m.group(2).strip())
        out.append(line)
    return meta, "\n".join(out) + "\n"


def subst(s, file, tmp):
    return s.replace("{file}", str(file)).replace("{tmp}", str(tmp)).replace("{root}", str(ROOT))


def run_case(path, tessel):
    meta, text = parse(path)
    if not meta["class"] or not meta["run"]:
        return "no '# class:' or '# run:' line"
    timeout = float(meta["timeout"][0]) if meta["timeout"] else 60.0
    want_rc = int(meta["exit"][0]) if meta["exit"] else 1
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        tmp = Path(tmp)
        prog = tmp / path.name
        prog.write_text(text)
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
               "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1", "TESSEL_ROOT": str(ROOT)}
        for kv in meta["env"]:
            k, _, v = kv.partition("=")
            env[k] = subst(v, prog, tmp)
        for cmd in meta["setup"]:
            p = subprocess.run(subst(cmd, prog, tmp), shell=True, cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=timeout)
            if p.returncode:
                return f"setup failed: {cmd}\n{p.stdout}{p.stderr}"
        args = [tessel] + [subst(a, prog, tmp) for a in shlex.split(meta["run"][0])]
        if meta["wrap"]:
            args = [subst(a, prog, tmp) for a in shlex.split(meta["wrap"][0])] + args
        t0 = time.time()
        proc = subprocess.Popen(args, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return f"hang: no answer in {timeout:.0f} s"
        dt = time.time() - t0
        text = out + err
        shown = text if len(text) < 3000 else text[:1500] + "\n...\n" + text[-1500:]
        for b in BAD:
            if b in text:
                return f"crash ({b}), exit {proc.returncode}:\n{shown}"
        if proc.returncode < 0:
            return f"killed by signal {-proc.returncode}:\n{shown}"
        if proc.returncode != want_rc:
            return f"exit {proc.returncode}, expected {want_rc}:\n{shown}"
        for frag in (subst(f, prog, tmp) for f in meta["expect"]):
            if frag not in text:
                return f"missing '{frag}' in:\n{shown}"
        for frag in meta["reject"]:
            if frag in text:
                return f"unexpected '{frag}' in:\n{shown}"
        for cmd in meta["check"]:
            p = subprocess.run(subst(cmd, prog, tmp), shell=True, cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=timeout)
            if p.returncode:
                return f"check failed: {cmd}\n{p.stdout}{p.stderr}\n(tessel said:)\n{shown}"
        return f"ok {dt:.1f}s"


def main():
    args = sys.argv[1:]
    tessel = str(ROOT / "build-asan" / "tessel")
    if args and not args[0].startswith("-") and os.path.sep in args[0]:
        tessel = str(Path(args.pop(0)).resolve())
    if not Path(tessel).exists():
        print(f"{tessel} is missing (make asan)")
        print("0 passed, 1 failed")
        return 1
    cases = sorted(p for p in HERE.iterdir() if p.suffix in (".tc", ".tile", ".txt"))
    if args:
        cases = [c for c in cases if any(a in c.name for a in args)]
    npass = nfail = 0
    for c in cases:
        try:
            r = run_case(c, tessel)
        except Exception as e:  # a broken case is a failure, not a runner crash
            r = f"runner error: {e!r}"
        if r.startswith("ok"):
            npass += 1
            print(f"ok   {c.name} ({r[3:]})")
        else:
            nfail += 1
            print(f"FAIL {c.name}: {r}")
    print(f"{npass} passed, {nfail} failed")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
