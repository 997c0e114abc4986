#!/usr/bin/env python3
"""Run one benchmark command and measure all of its processes (make bench, issue #11).

    measure.py RESULT.json -- CMD ARGS...

The wrapper makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process the
command starts stays below it even when its parent exits without waiting (pyspark leaves its
JVM to be reaped, for example), and it reaps them all. CPU time is then exact: the kernel adds a
reaped process's user+sys (and that of the children it reaped) to the reaper's RUSAGE_CHILDREN.
While the command runs, it samples the process tree every --interval seconds (default 0.25):
the summed resident set size of all processes (peak reported), and each process's utime+stime
from /proc/<pid>/stat as a cross-check of the rusage figure (the sampled sum misses at most
the last interval of short-lived processes).

After the command's main process exits, descendants still running get --linger seconds
(default 30) to finish, then SIGTERM, then SIGKILL; the result records how many were killed.

RESULT.json: {"rc", "wall_s", "user_s", "sys_s", "cpu_s", "proc_cpu_s" (sampled),
"peak_rss_bytes" (summed over the tree), "max_single_rss_bytes", "processes" (count seen),
"killed_leftovers", "process_peaks" (the 8 largest processes: pid, name, own peak RSS)}. The exit code is the command's.
"""
import ctypes
import json
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def children_map():
    """pid -> ppid for every process visible in /proc."""
    m = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(b")") + 2:].split()
        m[int(d)] = (int(rest[1]), rest)
    return m


def label(pid, fallback):
    """A short name of a process: its command line's program and first two arguments."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return fallback
    if not argv:
        return fallback
    args = [os.path.basename(a) if a.startswith("/") else a
            for a in argv[1:] if not a.startswith("--progress")][:2]
    return " ".join([os.path.basename(argv[0])] + args)[:80]


def tree(root, m):
    """The pids below root (root excluded) with their /proc stat fields."""
    kids = {}
    for pid, (ppid, _) in m.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], list(kids.get(root, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def main():
    args = sys.argv[1:]
    interval, linger = 0.25, 30.0
    while args and args[0].startswith("--") and args[0] != "--":
        if args[0] == "--interval":
            interval = float(args[1])
        elif args[0] == "--linger":
            linger = float(args[1])
        else:
            sys.exit(f"measure.py: unknown option {args[0]}")
        args = args[2:]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: measure.py [--interval S] [--linger S] RESULT.json -- CMD ARGS...")
    result_path, cmd = args[0], args[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("measure.py: prctl(PR_SET_CHILD_SUBREAPER) failed")
    me = os.getpid()
    t0 = time.monotonic()
    main_pid = os.fork()
    if main_pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        except OSError as e:
            print(f"measure.py: {cmd[0]}: {e}", file=sys.stderr)
            os._exit(127)
    # Forward SIGINT/SIGTERM to the command's process group is not needed: the command shares
    # ours, so a Ctrl-C of the runner reaches it directly. Just do not die before reaping.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    rc, main_done, wall = None, False, None
    peak_rss, max_single, seen, peaks = 0, 0, {}, {}
    deadline, killed, sent = None, 0, None
    while True:
        # reap whatever finished
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
                break
            if pid == 0:
                break
            if pid == main_pid:
                main_done = True
                wall = time.monotonic() - t0
                rc = os.waitstatus_to_exitcode(status)
                if rc < 0:
                    rc = 128 - rc
                deadline = time.monotonic() + linger
        if pid == -1:  # no children left at all
            break
        m = children_map()
        pids = tree(me, m)
        rss = 0
        for p in pids:
            rest = m[p][1]
            cpu = (int(rest[11]) + int(rest[12])) / TICK  # utime, stime
            r = int(rest[21]) * PAGE
            rss += r
            max_single = max(max_single, r)
            seen[p] = cpu
            if r > peaks.get(p, (0, ""))[0]:
                peaks[p] = (r, label(p, str(p)))
        peak_rss = max(peak_rss, rss)
        if main_done and deadline is not None and time.monotonic() > deadline:
            sig = signal.SIGTERM if sent is None else signal.SIGKILL
            for p in pids:
                try:
                    os.kill(p, sig)
                    killed += 1 if sent is None else 0
                except ProcessLookupError:
                    pass
            sent = sig
            deadline = time.monotonic() + 5
        time.sleep(interval)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = {
        "rc": rc,
        "wall_s": round(wall if wall is not None else time.monotonic() - t0, 3),
        "user_s": round(ru.ru_utime, 3),
        "sys_s": round(ru.ru_stime, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "proc_cpu_s": round(sum(seen.values()), 3),
        "peak_rss_bytes": peak_rss,
        "max_single_rss_bytes": max(max_single, ru.ru_maxrss * 1024),
        "processes": len(seen),
        "killed_leftovers": killed,
        "process_peaks": [{"pid": p, "name": n, "peak_rss_bytes": r}
                          for p, (r, n) in sorted(peaks.items(), key=lambda x: -x[1][0])[:8]],
        "cmd": cmd,
    }
    with open(result_path, "w") as f:
        json.dump(res, f, indent=1)
    sys.exit(rc if rc is not None else 1)


if __name__ == "__main__":
    main()
