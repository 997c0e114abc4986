"""Null keys in every physical form, for interop/nullkey_test.go (issue #17 item 5).

    nullkeys.py gen DIR                   write DIR/{plain,dict,ree,view}.arrow: the same rows,
                                          with the key column s plain, dictionary-encoded, run-end
                                          encoded and string_view; and DIR/slot.arrow: those rows
                                          with "" made "x", s dictionary-encoded with every null
                                          in a dictionary slot
    nullkeys.py check PLAN                run the checks of PLAN, a JSON list of [CHECK, ARGS...],
                                          and print their results as a JSON list; the checks:

    dedup INPUT OUTPUT...                 compare dedup outputs (Arrow IPC streams) with DuckDB's
                                          first row per s of INPUT
    window INPUT OUTPUT                   compare a `window tumbling --size 1h --key s --agg count`
                                          output with DuckDB's GROUP BY hour, s over INPUT
    aggs INPUT OUTPUT                     compare a `window tumbling --size 1h --key p --agg 'count,
                                          count(s), count_distinct(s)'` output with DuckDB's
                                          count(*), count(s), count(distinct s) GROUP BY hour, p
    keys INPUT STATE_JSON                 compare state-dump JSON lines with DuckDB's DISTINCT s
    delta-dedup INPUT TABLE               the Delta table written from dedup --key s: DuckDB's
                                          DISTINCT s over it equals that over INPUT, one row each
    delta-window INPUT TABLE              the Delta table written from the window output: its
                                          rows equal DuckDB's GROUP BY hour, s over INPUT
    delta-backfill TABLE INPUT...         the Delta table written from dedup --key s of the first
                                          INPUT, then backfilled from the others with --dedup-cols
                                          s: one row per s of all INPUTs, the first by id
    delta-partition INPUT TABLE           the Delta table written from INPUT partitioned by p and
                                          by v.p: DuckDB's GROUP BY p over it equals that over
                                          INPUT, the log's partition values and null counts agree

Each check's result is a JSON object: "ok" (bool) and what was compared. The oracle reads INPUT
with pyarrow, decodes dictionaries (take of the dictionary by the indices), run-end encoding and
views itself, and lets DuckDB group.

Rows: s is "x", "", "y" or null, in runs (so that run-end encoding has runs); the first batches
are the issue's: dictionary ["x", null] with index 1, then dictionary [""] with index 0, then
dictionary ["y"] with a null index. In the dictionary stream every batch has its own dictionary
(shuffled, with repeated and unused slots), and each null is either a null index or an index
of a null slot. p (the partition column) is dictionary-encoded likewise; v is a struct holding p.
"""

import datetime as dt
import glob
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "py"))

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
DICT = pa.dictionary(pa.int32(), pa.string())


def rows():
    """The logical rows: (s, p) per id, the first three the issue's."""
    rnd = random.Random(17)
    out = [(None, "a"), ("", None), (None, "b")]
    while len(out) < 400:
        s = rnd.choice(["x", "", "y", None, None])
        for _ in range(rnd.randint(1, 4)):
            out.append((s, rnd.choice(["a", "b", None])))
    return out[:400]


def batches_of(n):
    """Row ranges of the batches: the issue's three one-row batches, then varying sizes."""
    rnd = random.Random(5)
    cuts, at = [(0, 1), (1, 2), (2, 3)], 3
    while at < n:
        k = min(n - at, rnd.randint(1, 60))
        cuts.append((at, at + k))
        at += k
    return cuts


def dict_array(vals, rnd, first=None, null_index=0.5):
    """vals as a dictionary array: a shuffled dictionary with repeated and unused slots and a
    null slot; each null a null index (with probability null_index) or the null slot. first
    forces the issue's encodings."""
    if first is not None:
        d, idx = first
        return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(d, pa.string()))
    distinct = sorted({v for v in vals if v is not None})
    slots = distinct * 2 + [None, "unused"]
    rnd.shuffle(slots)
    null_slot = slots.index(None)
    idx = []
    for v in vals:
        if v is None:
            idx.append(None if rnd.random() < null_index else null_slot)
        else:
            idx.append(rnd.choice([i for i, s in enumerate(slots) if s == v]))
    return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(slots, pa.string()))


def gen(out_dir):
    data = rows()
    ids = list(range(len(data)))
    ts = [BASE + dt.timedelta(minutes=i) for i in ids]  # 400 minutes: 7 hourly windows
    first = {0: (["x", None], [1]), 1: ([""], [0]), 2: (["y"], [None])}
    forms = {
        "plain": pa.string(),
        "dict": DICT,
        "ree": pa.run_end_encoded(pa.int32(), pa.string()),
        "view": pa.string_view(),
        "slot": DICT,
    }
    for name, s_type in forms.items():
        if name == "slot":  # no "" at all, every null of s in a dictionary slot
            data = [("x" if s == "" else s, p) for s, p in data]
        schema = pa.schema([
            ("s", s_type), ("p", DICT), ("v", pa.struct([("p", DICT)])),
            ("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")),
        ])
        rnd = random.Random(name)
        with pa.ipc.new_stream(os.path.join(out_dir, name + ".arrow"), schema) as w:
            for bi, (lo, hi) in enumerate(batches_of(len(data))):
                sv = [data[i][0] for i in range(lo, hi)]
                pv = [data[i][1] for i in range(lo, hi)]
                if name == "dict":
                    s = dict_array(sv, rnd, first.get(bi))
                elif name == "slot":
                    s = dict_array(sv, rnd, null_index=0)
                elif name == "ree":
                    s = pc.run_end_encode(pa.array(sv, pa.string()), run_end_type=pa.int32())
                else:
                    s = pa.array(sv, s_type)
                p = dict_array(pv, rnd)
                v = pa.StructArray.from_arrays([dict_array(pv, rnd)], fields=[schema.field("v").type.field(0)])
                w.write_batch(pa.record_batch([s, p, v, pa.array(ids[lo:hi], pa.int64()),
                                               pa.array(ts[lo:hi], pa.timestamp("us", "UTC"))], schema=schema))
            empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
            w.write_batch(empty, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": "1"})


def plain(col):
    """col (an Array or ChunkedArray) decoded by hand to a plain array."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    out = []
    for c in chunks:
        if pa.types.is_dictionary(c.type):
            c = pc.take(plain(c.dictionary), c.indices)
        elif pa.types.is_run_end_encoded(c.type):
            c = plain(pc.run_end_decode(c))
        elif pa.types.is_struct(c.type):
            c = pa.StructArray.from_arrays([plain(c.field(i)) for i in range(c.type.num_fields)],
                                           fields=[pa.field(f.name, plain(c.field(i)).type) for i, f in enumerate(c.type)],
                                           mask=c.is_null())
        elif c.type == pa.string_view():
            c = c.cast(pa.string())
        out.append(c)
    return pa.concat_arrays(out) if len(out) != 1 else out[0]


def read_plain(path):
    tbl = pa.ipc.open_stream(path).read_all()
    return pa.table({n: plain(tbl.column(n)) for n in tbl.column_names})


_con = None


def duck():
    """The one DuckDB connection (with the delta extension) of this process, without the
    tables of an earlier check."""
    global _con
    if _con is None:
        import duckdb_delta
        _con = duckdb_delta.connect()
        _con.sql("set enable_progress_bar = false")
    for name in ("input", "got"):
        _con.sql(f"drop view if exists {name}")
        try:
            _con.unregister(name)
        except Exception:
            pass
    return _con


def values(con, q):
    return [list(r) for r in con.sql(q).fetchall()]


def check_dedup(inp, outs):
    con = duck()
    con.register("input", read_plain(inp))
    want = values(con, "select min(id) from input group by s order by 1")
    res = {"ok": True, "want_rows": len(want), "outputs": []}
    for out in outs:
        con.register("got", read_plain(out))
        got = values(con, "select id from got order by 1")
        same_keys = con.sql("select count(*) from (select s from got except select s from input)").fetchone()[0] == 0
        o = {"got_rows": len(got), "missing": [r[0] for r in want if r not in got],
             "extra": [r[0] for r in got if r not in want], "rows_of_input": same_keys}
        o["ok"] = not o["missing"] and not o["extra"] and len(got) == len(want) and same_keys
        res["ok"] = res["ok"] and o["ok"]
        res["outputs"].append(o)
        con.unregister("got")
    return res


WINDOW_ORACLE = "select epoch_us(date_trunc('hour', ts)) as w, s, count(*) as n from input group by all order by all"


def compare_windows(con, got_query, oracle=WINDOW_ORACLE):
    want = values(con, oracle)
    got = values(con, got_query)
    res = {"want_rows": len(want), "got_rows": len(got),
           "null_groups": sum(1 for r in got if r[1] is None),
           "missing": [str(r) for r in want if r not in got][:10],
           "extra": [str(r) for r in got if r not in want][:10]}
    res["ok"] = not res["missing"] and not res["extra"] and len(got) == len(want)
    return res


def check_window(inp, out):
    con = duck()
    con.register("input", read_plain(inp))
    con.register("got", read_plain(out))
    return compare_windows(con, "select epoch_us(window_start), s, count from got order by all")


def check_aggs(inp, out):
    con = duck()
    con.register("input", read_plain(inp))
    con.register("got", read_plain(out))
    return compare_windows(con, "select epoch_us(window_start), p, count, count_s, count_distinct_s from got order by all",
                           "select epoch_us(date_trunc('hour', ts)), p, count(*), count(s), count(distinct s) from input group by all order by all")


def check_keys(inp, state):
    con = duck()
    con.register("input", read_plain(inp))
    want = sorted((r[0] for r in values(con, "select distinct s from input")), key=lambda v: (v is not None, v or ""))
    with open(state) as f:
        got = sorted((json.loads(l)["s"] for l in f if l.strip()), key=lambda v: (v is not None, v or ""))
    return {"ok": got == want, "want": want, "got": got}


def table_uri(path):
    return "file://" + os.path.abspath(path)


def check_delta_dedup(inp, table):
    con = duck()
    con.register("input", read_plain(inp))
    q = "select count(*), count(distinct s), count(*) filter (s is null), count(*) filter (s = '') from {}"
    want = con.sql("select count(*), count(distinct s), count(*) filter (s is null), count(*) filter (s = '') from (select distinct s from input)").fetchone()
    got = con.execute(q.format("delta_scan(?)"), [table_uri(table)]).fetchone()
    return {"ok": list(got) == list(want), "want": list(want), "got": list(got),
            "distinct_in_table": con.execute("select count(*) from (select distinct s from delta_scan(?))", [table_uri(table)]).fetchone()[0]}


def check_delta_window(inp, table):
    con = duck()
    con.register("input", read_plain(inp))
    con.sql(f"create view got as select * from delta_scan('{table_uri(table)}')")
    return compare_windows(con, "select epoch_us(window_start), s, count from got order by all")


def check_delta_backfill(table, *inputs):
    """table holds one row per key of the union of inputs (the first input as the target's
    dedup output, the others backfilled with --dedup-cols s): the new keys' first rows."""
    con = duck()
    con.register("input", pa.concat_tables([read_plain(i) for i in inputs], promote_options="permissive"))
    want = values(con, "select s, min(id) from input group by s order by all")
    got = values(con, f"select s, min(id), count(*) from delta_scan('{table_uri(table)}') group by s order by all")
    res = {"want": want, "got": got}
    res["ok"] = [g[:2] for g in got] == want and all(g[2] == 1 for g in got)
    return res


def log_adds(table):
    adds = []
    for path in sorted(glob.glob(os.path.join(table, "_delta_log", "*.json"))):
        with open(path) as f:
            for line in f:
                a = json.loads(line).get("add")
                if a:
                    adds.append(a)
    return adds


def check_delta_partition(inp, table):
    con = duck()
    con.register("input", read_plain(inp))
    want = values(con, "select p, v.p, count(*), count(*) filter (s is null) from input group by all order by all")
    con.sql(f"create view got as select * from delta_scan('{table_uri(table)}')")
    # The table partitions by p and by v.p (copied into the top-level column v_p, or the
    # first free name the writer chose: every column but the input's).
    extra = [c for c in values(con, "select column_name from (describe got)") if c[0] not in ("s", "p", "v", "id", "ts")]
    vp = extra[0][0] if extra else "v.p"
    got = values(con, f'select p, "{vp}", count(*), count(*) filter (s is null) from got group by all order by all')
    adds = log_adds(table)
    # Partition values in the log: per (p, v_p) pair the rows of its files, nulls as null.
    by_part = {}
    s_nulls = 0
    for a in adds:
        pv = a["partitionValues"]
        k = (pv.get("p"), pv.get(vp))
        st = json.loads(a["stats"])
        by_part[k] = by_part.get(k, 0) + st["numRecords"]
        s_nulls += st["nullCount"]["s"]
    want_parts = {(r[0], r[1]): r[2] for r in want}
    want_s_nulls = con.sql("select count(*) filter (s is null) from input").fetchone()[0]
    res = {"want": want, "got": got, "partition_column": vp,
           "log_partitions": sorted([[k[0], k[1], n] for k, n in by_part.items()], key=str),
           "log_s_null_count": s_nulls, "want_s_null_count": want_s_nulls}
    res["ok"] = got == want and by_part == want_parts and s_nulls == want_s_nulls
    return res


CHECKS = {
    "dedup": lambda args: check_dedup(args[0], args[1:]),
    "window": lambda args: check_window(*args),
    "aggs": lambda args: check_aggs(*args),
    "keys": lambda args: check_keys(*args),
    "delta-dedup": lambda args: check_delta_dedup(*args),
    "delta-window": lambda args: check_delta_window(*args),
    "delta-partition": lambda args: check_delta_partition(*args),
    "delta-backfill": lambda args: check_delta_backfill(*args),
}

if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:  # check PLAN: a JSON list of [check, args...]; prints a JSON list of results
        print(json.dumps([CHECKS[c[0]](c[1:]) for c in json.loads(sys.argv[2])]))
