#!/usr/bin/env python3
"""make bench, workload `group` (issue #20): W1 (read-kafka → write-delta) in consumer-group
mode on one machine, members started by `streamkit run --parallel N`.

    group.py SK PY BROKER TOPIC RECORDS PARTITIONS RESDIR

TOPIC is pre-filled with RECORDS nexmark bids in PARTITIONS partitions (run.sh fill_topic) and
the broker is otherwise idle. Every run reads the whole topic into a fresh table with a fresh
group (--until now: each member ends once the partitions it holds reached the end fixed when
they were assigned) and is checked: the table holds RECORDS rows, one per (partition, offset)
(delta-rs). Steps:

  scaling   one member with every process pinned to core 0 (taskset -c 0), against two
            members, member i's processes pinned to core i (taskset -c $STREAMKIT_MEMBER):
            wall seconds and CPU-seconds (measure.py: user+sys of every process, run's own
            included), their ratio, CPU-s per 1M records. BENCH_GROUP_REPEAT runs of each
            (default 1), alternated; the figures are the medians.
  members   1 to 4 members (not pinned: the machine's cores as they come), --progress=json:
            total records/s (RECORDS / wall) and each member's records/s (its read-kafka's
            final records / its run time, from run's exit lines).
  rebalance 3 members as separate processes, live (no --until), --log-format json; then
            BENCH_GROUP_CYCLES times (default 10) one member leaves (SIGINT) and a new one
            joins in its place. For every partition that moves, the pause is the time from its
            old owner's release (its "partitions revoked" line naming the partition, or for a
            leaving member its interrupt line) to the new owner's "partition assigned" line
            (which comes once its start offset is read from the table; fetching starts
            then). Median and p99 (nearest rank) over all moves.

Writes RESDIR/group.json and logs under RESDIR/group/.
"""
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time

SCHEMA = "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, date_time TIMESTAMP, extra STRING"


def pipeline(broker, topic, group, table, pin, live=False):
    """The W1 member pipeline in group mode; pin prefixes each stage (taskset …)."""
    until = "" if live else " --until now"
    g = " --log-format json" if live else ""  # the rebalance pauses come from these lines
    return (f"{pin}streamkit{g} read-kafka -b {broker} -t {topic} --consumer-group {group} --progress-table {table}"
            f"{until} --value-format json --value-schema '{SCHEMA}' --columns 'value.*,partition,offset'"
            f" | {pin}streamkit{g} write-delta {table}")


def check(py, table, records):
    """The table's rows and distinct (partition, offset) pairs (delta-rs)."""
    out = subprocess.run([py, "-c", """
import sys, json
from deltalake import DeltaTable
t = DeltaTable(sys.argv[1]).to_pyarrow_table(columns=["partition", "offset"])
pairs = set(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
print(json.dumps({"rows": t.num_rows, "distinct": len(pairs)}))
""", table], capture_output=True, text=True)
    if out.returncode != 0:
        return {"status": "FAILED", "detail": out.stderr.strip().splitlines()[-1:]}
    c = json.loads(out.stdout)
    ok = c["rows"] == records and c["distinct"] == records
    return {"status": "ok" if ok else "FAILED", "rows": c["rows"], "distinct": c["distinct"]}


def measured_run(sk, py, here, res, label, n, pipe, env):
    """streamkit --progress=json run --parallel n -- pipe, measured by measure.py."""
    m = os.path.join(res, label + ".measure.json")
    log = os.path.join(res, label + ".log")
    with open(log, "w") as f:
        rc = subprocess.run([py, os.path.join(here, "measure.py"), m, "--", sk, "--progress=json", "run",
                             "--parallel", str(n), "--", pipe], stdout=subprocess.DEVNULL, stderr=f, env=env).returncode
    return rc, json.load(open(m)), log


def json_lines(path):
    """The JSON objects among a log's lines (progress and log lines; others skipped)."""
    for line in open(path):
        if not line.startswith("{"):
            continue
        try:
            yield json.loads(line)
        except ValueError:
            continue


def member_rates(log):
    """Per member: records its read-kafka read (its final progress) and its run time."""
    recs, secs = {}, {}
    for o in json_lines(log):
        if o.get("stage") == "read-kafka" and "member" in o:
            recs[o["member"]] = o.get("records_in", 0)
        if o.get("event") == "exit":
            secs[o["member"]] = o.get("elapsed_s")
    return [{"member": i, "records": recs.get(i, 0), "elapsed_s": secs.get(i),
             "rate": recs.get(i, 0) / secs[i] if secs.get(i) else None} for i in sorted(secs)]


def pct(xs, p):
    """Nearest-rank percentile."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def rebalance(sk, broker, topic, out, cycles, env):
    """3 live members; cycles of one leaving and a new one joining. Returns the pauses."""
    table, group = os.path.join(out, "rebalance-table"), f"bench-rebalance-{int(time.time())}"
    procs, logs, seq = {}, [], [0]

    def start(slot):
        seq[0] += 1
        log = os.path.join(out, f"rebalance-m{seq[0]}.log")
        logs.append(log)
        f = open(log, "w")
        p = subprocess.Popen(["sh", "-c", pipeline(broker, topic, group, table, "", live=True)], stdout=subprocess.DEVNULL,
                             stderr=f, env=dict(env, STREAMKIT_PROGRESS="off"), start_new_session=True)
        procs[slot] = (p, log)

    def stop(p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        p.wait(timeout=90)

    def assigned(log):
        return sum(1 for l in open(log) if '"partition assigned"' in l)

    for slot in range(3):
        start(slot)
        time.sleep(3)
    time.sleep(5)
    for c in range(cycles):
        slot = c % 3
        p, _ = procs[slot]
        stop(p)
        time.sleep(3)
        start(slot)
        deadline = time.time() + 60
        while assigned(procs[slot][1]) == 0 and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(3)
    for p, _ in procs.values():
        stop(p)
    # A member that ended by itself (exit ≠ 130) is counted: its partitions moved without a
    # release line, so they are not among the pauses.
    failed = sum(1 for log in logs if any("streamkit: " in l for l in open(log)))
    return pauses(logs), failed


def ts(o):
    t = o["time"]
    # RFC 3339 with up to nanoseconds: keep microseconds for fromisoformat
    import datetime
    base, _, frac = t.rstrip("Z").partition(".")
    frac = (frac + "000000")[:6]
    return datetime.datetime.fromisoformat(f"{base}.{frac}+00:00").timestamp()


def pauses(logs):
    """Pairs every reassignment of a partition with its previous owner's release."""
    events = []  # (time, member log, kind, [partitions])
    for log in logs:
        for o in json_lines(log):
            msg = o.get("msg", "")
            if msg == "partition assigned":
                events.append((ts(o), log, "assigned", [f"{o['topic']}/{o['partition']}"]))
            elif msg == "partitions revoked" and o.get("which"):
                events.append((ts(o), log, "revoked", o["which"].split(",")))
            elif msg.startswith("interrupt:") and o.get("stage") == "read-kafka":
                events.append((ts(o), log, "leaving", None))
    events.sort()
    owner, held, release, out = {}, {}, {}, []
    for t, log, kind, parts in events:
        if kind == "leaving":
            for p in held.get(log, set()):
                release.setdefault(p, (t, "leave"))
        elif kind == "revoked":
            for p in parts:
                release[p] = (t, "revoke")
                held.get(log, set()).discard(p)
        else:
            p = parts[0]
            prev = owner.get(p)
            if prev is not None and prev != log and p in release:
                rt, why = release.pop(p)
                out.append({"partition": p, "pause_s": t - rt, "cause": why})
            release.pop(p, None)
            if prev is not None:
                held.get(prev, set()).discard(p)
            owner[p] = log
            held.setdefault(log, set()).add(p)
    return out


def main():
    sk, py, broker, topic, records, parts, res = sys.argv[1:8]
    records, parts = int(records), int(parts)
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(res, "group")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, STREAMKIT_CHECKPOINT="", PATH=os.path.dirname(sk) + os.pathsep + os.environ.get("PATH", ""))
    repeat = int(os.environ.get("BENCH_GROUP_REPEAT", "1"))
    cycles = int(os.environ.get("BENCH_GROUP_CYCLES", "10"))
    result = {"records": records, "partitions": parts, "topic": topic, "repeat": repeat, "cycles": cycles}
    stamp = int(time.time())

    def one(label, n, pin):
        table = os.path.join(out, label + "-table")
        group = f"bench-{label}-{stamp}"
        rc, m, log = measured_run(sk, py, here, out, label, n, pipeline(broker, topic, group, table, pin), env)
        r = {"label": label, "members": n, "rc": rc, "wall_s": m["wall_s"], "cpu_s": m["cpu_s"],
             "cpu_per_m": m["cpu_s"] / records * 1e6, "peak_rss_bytes": m.get("peak_rss_bytes"),
             "check": check(py, table, records) if rc == 0 else {"status": "FAILED", "detail": f"exit {rc}"},
             "per_member": member_rates(log)}
        print(f"[group] {label}: rc {rc}, {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU-s, {r['check']['status']}", file=sys.stderr)
        subprocess.run(["rm", "-rf", table])
        return r

    # scaling: 1 member on core 0 vs 2 members on cores 0 and 1, alternated
    ones, twos = [], []
    for i in range(repeat):
        ones.append(one(f"pinned1-{i}", 1, "taskset -c $STREAMKIT_MEMBER "))
        twos.append(one(f"pinned2-{i}", 2, "taskset -c $STREAMKIT_MEMBER "))
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    result["scaling"] = {"one": ones, "two": twos,
                         "one_wall_s": med(ones, "wall_s"), "two_wall_s": med(twos, "wall_s"),
                         "one_cpu_per_m": med(ones, "cpu_per_m"), "two_cpu_per_m": med(twos, "cpu_per_m")}
    s = result["scaling"]
    s["throughput_ratio"] = s["one_wall_s"] / s["two_wall_s"]
    s["cpu_ratio"] = s["two_cpu_per_m"] / s["one_cpu_per_m"]
    # members 1..4, unpinned
    result["members"] = [one(f"members{n}", n, "") for n in range(1, 5)]
    # rebalance pauses with 3 members
    ps, failed = rebalance(sk, broker, topic, out, cycles, env)
    xs = [p["pause_s"] for p in ps]
    result["rebalance"] = {"moves": ps, "n": len(xs), "members_failed": failed,
                           "median_s": statistics.median(xs) if xs else None, "p99_s": pct(xs, 99) if xs else None,
                           "max_s": max(xs) if xs else None}
    for cause in ("revoke", "leave"):
        ys = [p["pause_s"] for p in ps if p["cause"] == cause]
        result["rebalance"][cause] = {"n": len(ys), "median_s": statistics.median(ys) if ys else None,
                                      "p99_s": pct(ys, 99) if ys else None}
    subprocess.run(["rm", "-rf", os.path.join(out, "rebalance-table")])
    json.dump(result, open(os.path.join(res, "group.json"), "w"), indent=1)
    print(f"[group] scaling {s['throughput_ratio']:.2f}x, CPU/1M {s['one_cpu_per_m']:.2f} → {s['two_cpu_per_m']:.2f}; "
          f"rebalance n={len(xs)} median {result['rebalance']['median_s']} p99 {result['rebalance']['p99_s']}", file=sys.stderr)


if __name__ == "__main__":
    main()
