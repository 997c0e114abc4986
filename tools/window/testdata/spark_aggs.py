"""Reference side of tools/window's TestAggregatesLikeSpark.

usage: spark_aggs.py gen IN.arrows IN.parquet
       spark_aggs.py compare IN.parquet SPEC.json

gen writes the input rows (keys a..d with random values and nulls, key n whose value columns
are all null, key big with 6000 rows of distinct strings in one window) as an Arrow IPC stream
for streamkit and as Parquet for Spark. compare computes, for each case of SPEC.json (a window
size and slide, streamkit's output file, and the aggregates), Spark's groupBy(window(ts),
k).agg(...) in one local session (ANSI mode, UTC) and compares it with streamkit's output,
aggregate by aggregate: exact ones equal (doubles to 1e-9 relative), collect_* as multisets,
percentile_approx within rank error ⌈n/accuracy⌉ of the exact rank (and equal to Spark's
below accuracy/2 rows, where Spark's summary is exact; how often it equals Spark's otherwise is
printed), approx_count_distinct within 3 relativeSD of
the exact count; result types as Spark's. Prints "case NAME ok N groups" or "case NAME
differ: …" per case, and figures of the approximate aggregates."""
import json
import math
import random
import sys

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq


def gen(arrows, parquet):
    r = random.Random(7)
    base = 1714521600_000000  # 2024-05-01T00:00:00Z
    rows = []
    for i in range(600):
        k = r.choice("abcd")
        ts = base + i * 200_000 + r.randrange(0, 150_000)
        x = None if r.random() < 0.15 else r.randrange(-50, 200)
        f = None if r.random() < 0.1 else round(r.gauss(10, 5), 3)
        s = None if r.random() < 0.1 else r.choice(["ann", "bob", "cy", "dee", "eve", "fay"])
        rows.append((k, ts, x, f, s))
    for i in range(40):
        rows.append(("n", base + i * 3_000_000, None, None, None))
    for i in range(6000):
        rows.append(("big", base + 60_000_000 + i * 1_000, r.randrange(0, 100000), r.random(), "u%d" % r.randrange(0, 10**9)))
    rows.sort(key=lambda t: t[1])
    t = pa.table({
        "id": pa.array(range(len(rows)), pa.int64()),
        "k": pa.array([t[0] for t in rows], pa.string()),
        "ts": pa.array([t[1] for t in rows], pa.timestamp("us", "UTC")),
        "x": pa.array([t[2] for t in rows], pa.int64()),
        "f": pa.array([t[3] for t in rows], pa.float64()),
        "s": pa.array([t[4] for t in rows], pa.string()),
    })
    with pa.ipc.new_stream(arrows, t.schema) as w:
        for b in t.to_batches(max_chunksize=97):
            w.write_batch(b)
    pq.write_table(t, parquet)


SPARK_TO_ARROW = {"bigint": pa.int64(), "double": pa.float64(), "string": pa.string(), "int": pa.int32()}


def arrow_type(dt):
    s = dt.simpleString()
    if s.startswith("array<"):
        return pa.list_(arrow_type_name(s[6:-1]))
    return arrow_type_name(s)


def arrow_type_name(s):
    return SPARK_TO_ARROW.get(s, s)


def same_float(a, b):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def same(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return same_float(a, b)
    return a == b


def rank_ok(values, got, p, accuracy):
    """got is within rank error n/accuracy (rounded up: ranks are whole) of the exact rank
    ceil(p n) of values."""
    v = sorted(values)
    n = len(v)
    lo = sum(1 for x in v if x < got) + 1
    hi = sum(1 for x in v if x <= got)
    want = math.ceil(p * n)
    err = math.ceil(n / accuracy)
    return hi >= lo and lo - err <= want <= hi + err


def compare(parquet, spec_path):
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    spec = json.load(open(spec_path))
    s = (SparkSession.builder.master("local[1]").config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.ansi.enabled", "true").getOrCreate())
    s.sparkContext.setLogLevel("OFF")
    base = s.read.parquet(parquet).cache()
    approx_same = {True: 0, False: 0}
    for case in spec:
        problems, groups = [], 0
        win = F.window("ts", case["size"], case["slide"]) if case.get("slide") else F.window("ts", case["size"])
        aggs = case["aggs"]
        exprs = [F.expr(a["expr"]).alias(a["name"]) for a in aggs]
        # the values of every group, to check the approximate aggregates against exact answers
        exprs += [F.collect_list(c).alias("_" + c) for c in ("x", "f", "s")]
        df = base.groupBy(win, "k").agg(*exprs)
        want = {}
        for row in df.collect():
            want[(row["window"]["start"].replace(tzinfo=None), row["k"])] = row
        types = {f.name: arrow_type(f.dataType) for f in df.schema.fields}
        got_t = pa.ipc.open_stream(case["out"]).read_all()
        for a in aggs:
            gt = got_t.schema.field(a["name"]).type
            if pa.types.is_list(gt):
                gt = pa.list_(gt.value_type)
            if gt != types[a["name"]]:
                problems.append(f"{case['name']} {a['name']}: type {gt}, Spark {types[a['name']]}")
        got = {}
        for row in got_t.to_pylist():
            got[(row["window_start"].replace(tzinfo=None), row["k"])] = row
        if set(got) != set(want):
            problems.append(f"{case['name']}: groups {sorted(set(got) ^ set(want))[:5]} on one side only")
        for key in sorted(set(got) & set(want)):
            groups += 1
            g, w = got[key], want[key]
            for a in aggs:
                name, kind = a["name"], a.get("check", "exact")
                gv, wv = g[name], w[name]
                ok = True
                if kind == "exact":
                    ok = same(gv, wv)
                elif kind == "multiset":
                    ok = sorted(gv, key=repr) == sorted(wv, key=repr)
                elif kind == "rank":
                    vals = w["_" + a["col"]]
                    ps = a["p"] if isinstance(a["p"], list) else [a["p"]]
                    gl = gv if isinstance(gv, list) else [gv]
                    ok = (gv is None) == (wv is None) and (gv is None or all(rank_ok(vals, x, p, a["accuracy"]) for x, p in zip(gl, ps)))
                    if ok and gv is not None and 2 * len(vals) < a["accuracy"]:
                        ok = same(gv, wv)  # below accuracy/2 rows Spark's summary is exact, and so is ours
                    approx_same[same(gv, wv)] += 1
                elif kind == "hll":
                    exact = len(set(w["_" + a["col"]]))
                    ok = abs(gv - exact) <= 3 * a["rsd"] * exact and abs(wv - exact) <= 3 * a["rsd"] * exact
                    if exact > 1000:
                        print(f"{case['name']} {key[1]} {name}: streamkit {gv}, Spark {wv}, exact {exact}")
                if not ok:
                    problems.append(f"{case['name']} {key} {name}: streamkit {gv!r}, Spark {wv!r}")
        print(f"case {case['name']} " + ("ok %d groups" % groups if not problems else "differ: " + " | ".join(problems[:30])))
    print(f"percentile_approx answers equal to Spark's: {approx_same[True]}, different (within the bound): {approx_same[False]}")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3])
    else:
        compare(sys.argv[2], sys.argv[3])
