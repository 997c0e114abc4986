#!/usr/bin/env python3
"""Per-epoch commit latency of write-delta, local disk vs bucket (make bench, issue #19).

    commit_latency.py STREAMKIT OUT.json WORKDIR LOCAL_TABLE BUCKET_TABLE [EPOCHS [ROWS]]

For each table (a local directory, then an s3:// URL; the S3 server and its credentials from
the AWS_* environment, never argv) runs

    streamkit generate --preset nexmark-bids --seed 1 --rows EPOCHS*ROWS
        --max-records-per-epoch ROWS --checkpoint WORKDIR/<where>/gen
      | streamkit --log-level debug --log-format json write-delta TABLE --checkpoint WORKDIR/<where>/wd

(EPOCHS 200, ROWS 1,000: small epochs, so the commit is what each one costs; checkpoints stay
local) and reads write-delta's "committed epoch" log lines. Their "ms" is what write-delta
measures per epoch from the epoch's barrier to its commit's success: closing (on a bucket:
uploading) the epoch's data file, the put-if-absent of _delta_log/N.json, and every 10th
commit the classic checkpoint, in milliseconds. The first epoch (it creates the table) is left
out. Writes {"local": S, "bucket": S} with S = {"epochs", "median_ms", "p99_ms", "mean_ms",
"max_ms", "wall_s", "table"} (p99 by the nearest-rank method) and prints it.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time


def pct(xs, p):
    """Nearest-rank percentile p (0..100] of xs."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def run(sk, table, work, epochs, rows):
    os.makedirs(work, exist_ok=True)
    gen = [sk, "--progress=off", "generate", "--preset", "nexmark-bids", "--seed", "1", "--rows", str(epochs * rows),
           "--max-records-per-epoch", str(rows), "--checkpoint", os.path.join(work, "gen")]
    wd = [sk, "--progress=off", "--log-level", "debug", "--log-format", "json", "write-delta", table,
          "--checkpoint", os.path.join(work, "wd")]
    t0 = time.monotonic()
    g = subprocess.Popen(gen, stdout=subprocess.PIPE)
    w = subprocess.run(wd, stdin=g.stdout, stderr=subprocess.PIPE, text=True)
    g.stdout.close()
    grc = g.wait()
    wall = time.monotonic() - t0
    if grc or w.returncode:
        sys.exit(f"commit_latency.py: {table}: generate exit {grc}, write-delta exit {w.returncode}: "
                 + (w.stderr.strip().splitlines() or [""])[-1])
    ms = {}
    for line in w.stderr.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("msg") == "committed epoch":
            ms[r["epoch"]] = r["ms"]
    if len(ms) != epochs:
        sys.exit(f"commit_latency.py: {table}: {len(ms)} committed epochs logged, want {epochs}")
    xs = [ms[e] for e in sorted(ms) if e != min(ms)]
    return {"epochs": len(xs), "median_ms": statistics.median(xs), "p99_ms": pct(xs, 99),
            "mean_ms": round(statistics.fmean(xs), 2), "max_ms": max(xs), "wall_s": round(wall, 2), "table": table}


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    sk, out, work, local, bucket = sys.argv[1:6]
    epochs = int(sys.argv[6]) if len(sys.argv) > 6 else 200
    rows = int(sys.argv[7]) if len(sys.argv) > 7 else 1000
    res = {"rows_per_epoch": rows,
           "local": run(sk, local, os.path.join(work, "local"), epochs, rows),
           "bucket": run(sk, bucket, os.path.join(work, "bucket"), epochs, rows)}
    with open(out + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(out + ".tmp", out)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
