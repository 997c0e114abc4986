"""One Spark + delta-spark session for the v2 checkpoint peer test (v2checkpoint_peer_test.go).

    v2ckpt_peers.py serve DIR

builds, in one session, tables with delta.checkpointPolicy=v2 under DIR and the reference rows
of every read the test makes, writes the Arrow IPC inputs streamkit appends, prints
"RESULT {...}" (tables, inputs) and then answers one JSON command a line, each with one
"RESULT {...}" line ("ok": false and "error" on a failure):

    {"cmd": "compare", "pairs": [[KEY, ARROW_FILE], ...]}   read-delta output vs reference KEY
    {"cmd": "spark", "reads": [[KEY, TABLE, VERSION|null], ...]}   Spark's read vs reference KEY
    {"cmd": "duckdb", "reads": [[KEY, TABLE], ...]}                 DuckDB delta_scan vs KEY
    {"cmd": "deltars", "table": TABLE, "key": KEY}           delta-rs: its read vs KEY, or its refusal
    {"cmd": "quit"}

Tables (interval 3: Spark checkpoints at 3 and 6):
  v2_json      v0 create, v1..v6 appends of 3 rows, v7 DELETE id = 4 (rewrites a file);
               top-level checkpoint files JSON (Spark's default), one sidecar each
  v2_parquet   the same with spark.databricks.delta.checkpointV2.topLevelFileFormat=parquet
  v2_json_only_ckpt     v2_json without commits 0..5: only checkpoint 6 (JSON + sidecar) gives it
  v2_classic_named      v2_parquet with its v2 checkpoint 6 renamed to the classic name
                        00000000000000000006.checkpoint.parquet (a classic-named v2 spec
                        checkpoint), commits 0..5 and _last_checkpoint removed
Reference keys: each table's name (latest), "v2_json@4", "v2_parquet@4", "v2_json_follow2"
(Spark's stream from startingVersion 2 with ignoreChanges), "final" (v2_json after the 25
appends: Spark's rows plus every input) and "final@24" (Spark's rows plus inputs 0..16: v8 is
input 0).
"""
import json
import os
import shutil
import sys
import traceback

import pyarrow as pa
import pyarrow.ipc as ipc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
from peers import canon_rows  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
APPENDS = 25


def rows(k):
    return [(3 * k + j, "r%d" % (3 * k + j)) for j in range(3)]


def build(s, base):
    ref = {}
    for name, fmt in (("v2_json", None), ("v2_parquet", "parquet")):
        if fmt:
            s.conf.set("spark.databricks.delta.checkpointV2.topLevelFileFormat", fmt)
        p = os.path.join(base, name)
        s.sql("CREATE TABLE delta.`%s` (id BIGINT, s STRING) USING delta TBLPROPERTIES "
              "('delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='3')" % p)
        for k in range(6):
            s.createDataFrame(rows(k), "id BIGINT, s STRING").coalesce(1).write.format("delta").mode("append").save(p)
        if name == "v2_json":
            s.sql("DELETE FROM delta.`%s` WHERE id = 4" % p)
        if fmt:
            s.conf.unset("spark.databricks.delta.checkpointV2.topLevelFileFormat")
        ref[name] = canon_rows(s.read.format("delta").load(p).toArrow())
        ref[name + "@4"] = canon_rows(s.read.format("delta").option("versionAsOf", 4).load(p).toArrow())
    log = lambda t: os.path.join(base, t, "_delta_log")  # noqa: E731

    q = os.path.join(base, "v2_json_only_ckpt")
    shutil.copytree(os.path.join(base, "v2_json"), q)
    for v in range(6):
        os.remove(os.path.join(log("v2_json_only_ckpt"), "%020d.json" % v))
    ref["v2_json_only_ckpt"] = ref["v2_json"]

    q = os.path.join(base, "v2_classic_named")
    shutil.copytree(os.path.join(base, "v2_parquet"), q)
    top = [n for n in os.listdir(log("v2_classic_named")) if n.startswith("%020d.checkpoint." % 6) and n.endswith(".parquet")]
    assert len(top) == 1, top
    os.rename(os.path.join(log("v2_classic_named"), top[0]), os.path.join(log("v2_classic_named"), "%020d.checkpoint.parquet" % 6))
    for n in os.listdir(log("v2_classic_named")):
        if n == "_last_checkpoint" or n.startswith(".") or (n.endswith(".json") and int(n[:20]) < 6):
            os.remove(os.path.join(log("v2_classic_named"), n))
    ref["v2_classic_named"] = canon_rows(s.read.format("delta").load(q).toArrow())

    # Spark's stream from version 2 (before checkpoint 3) with ignoreChanges: the DELETE's
    # rewritten file comes again.
    p = os.path.join(base, "v2_json")
    st = (s.readStream.format("delta").option("startingVersion", 2).option("ignoreChanges", "true").load(p)
          .writeStream.format("memory").queryName("follow2").trigger(availableNow=True).start())
    st.awaitTermination()
    ref["v2_json_follow2"] = canon_rows(s.table("follow2").toArrow())

    inputs = []
    for k in range(APPENDS):
        f = os.path.join(base, "in-%02d.arrows" % k)
        t = pa.Table.from_pylist([{"id": 1000 + 3 * k + j, "s": "w%d-%d" % (k, j)} for j in range(3)], SCHEMA)
        with open(f, "wb") as out:
            w = ipc.new_stream(out, SCHEMA)
            w.write_table(t)
            w.close()
        inputs.append((f, t))
    spark_rows = [json.loads(r) for r in ref["v2_json"]]
    added = lambda n: [r for _, t in inputs[:n] for r in t.to_pylist()]  # noqa: E731
    ref["final"] = sorted(json.dumps(r, sort_keys=True) for r in spark_rows + added(APPENDS))
    ref["final@24"] = sorted(json.dumps(r, sort_keys=True) for r in spark_rows + added(17))
    return ref, [f for f, _ in inputs]


def diff(key, got, want):
    if got == want:
        return None
    msg = "%s: %d rows, reference %d" % (key, len(got), len(want))
    for a, b in zip(got, want):
        if a != b:
            return msg + "; first difference: got %s, want %s" % (a, b)
    return msg


def serve(base):
    import spark_delta

    out = sys.stdout
    sys.stdout = sys.stderr  # Spark's prints go to stderr; results to out

    def reply(obj):
        out.write("RESULT " + json.dumps(obj) + "\n")
        out.flush()

    s = spark_delta.session(app_name="streamkit-v2-checkpoints")
    try:
        ref, inputs = build(s, base)
        reply({"ok": True, "inputs": inputs, "counts": {k: len(v) for k, v in ref.items()}})
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            cmd = json.loads(line)
            try:
                errs, done = [], []
                if cmd["cmd"] == "quit":
                    reply({"ok": True})
                    break
                elif cmd["cmd"] == "compare":
                    for key, f in cmd["pairs"]:
                        with open(f, "rb") as fh:
                            got = canon_rows(ipc.open_stream(fh).read_all())
                        errs.append(diff(key, got, ref[key]))
                        done.append("read-delta %s: %d rows" % (key, len(got)))
                elif cmd["cmd"] == "spark":
                    for key, table, version in cmd["reads"]:
                        r = s.read.format("delta")
                        if version is not None:
                            r = r.option("versionAsOf", version)
                        got = canon_rows(r.load(table).select("id", "s").toArrow())
                        errs.append(diff("spark " + key, got, ref[key]))
                        done.append("spark %s: %d rows" % (key, len(got)))
                elif cmd["cmd"] == "duckdb":
                    import duckdb_delta

                    con = duckdb_delta.connect()
                    for key, table in cmd["reads"]:
                        got = con.sql("SELECT id, s FROM delta_scan('file://%s')" % table).arrow()
                        if hasattr(got, "read_all"):
                            got = got.read_all()
                        got = canon_rows(got)
                        errs.append(diff("duckdb " + key, got, ref[key]))
                        done.append("duckdb %s: %d rows" % (key, len(got)))
                elif cmd["cmd"] == "deltars":
                    from deltalake import DeltaTable

                    try:
                        got = canon_rows(DeltaTable(cmd["table"]).to_pyarrow_table(columns=["id", "s"]))
                    except Exception as e:  # delta-rs without v2 checkpoints refuses the feature
                        if "v2Checkpoint" not in str(e):
                            raise
                        done.append("delta-rs refuses: %s" % str(e).splitlines()[0])
                    else:
                        errs.append(diff("delta-rs " + cmd["key"], got, ref[cmd["key"]]))
                        done.append("delta-rs %s: %d rows" % (cmd["key"], len(got)))
                else:
                    raise ValueError("unknown command %r" % cmd["cmd"])
                errs = [e for e in errs if e]
                reply({"ok": not errs, "error": "; ".join(errs), "done": done})
            except Exception:
                reply({"ok": False, "error": traceback.format_exc()})
    finally:
        s.stop()


def _run():
    if len(sys.argv) != 3 or sys.argv[1] != "serve":
        sys.exit(__doc__)
    serve(sys.argv[2])


if __name__ == "__main__":
    from peers import _hard_exit

    _hard_exit(_run)
