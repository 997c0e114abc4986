"""Deletion-vector fixtures and checks for dv_peer_test.go, in ONE Spark session.

    dv_peers.py DIR     then commands on stdin, one per line; each answers with lines ending
                        in a line "done"

Commands:
    make                Spark writes DIR/dv (delta.enableDeletionVectors=true): appends, DELETE,
                        UPDATE, MERGE, another DELETE on files that already have a vector, an
                        append; then copies dv_inline (every on-disk vector stored inline, "i")
                        and dv_abs (every vector at an absolute path, "p"). Writes, for every
                        version N of dv, Spark's read as DIR/expect/dv@N.json; Spark's read of
                        the copies as expect/dv_inline.json and expect/dv_abs.json; Spark's
                        stream from version 0 with skipChangeCommits as expect/dv_skip.json; an
                        Arrow stream of new rows for write-delta as DIR/append.arrows. Prints
                        the storage types and row-group counts seen ("stats ...") and
                        the table's versions ("versions N").
    compare EXPECT OUT  compares a read-delta output (Arrow IPC stream) with an expected file
                        (as rows, in any order): "ok ..." or "diff ...".
    spark TABLE NAME [PREDICATE]
                        Spark's read of TABLE now (rows where PREDICATE), as expect/NAME.json.
    deltars TABLE NAME  delta-rs's read of TABLE (a table without deletion vectors).
"""

import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import ipc

Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_encode(b):
    b = b + b"\0" * (-len(b) % 4)  # Delta pads to 4 bytes; sizeInBytes keeps the length
    out = []
    for i in range(0, len(b), 4):
        v = int.from_bytes(b[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            chunk.append(Z85[v % 85])
            v //= 85
        out.append("".join(reversed(chunk)))
    return "".join(out)


def z85_decode(s):
    out = bytearray()
    for i in range(0, len(s), 5):
        v = 0
        for c in s[i : i + 5]:
            v = v * 85 + Z85.index(c)
        out += v.to_bytes(4, "big")
    return bytes(out)


def dv_file(table, d):
    s = d["pathOrInlineDv"]
    prefix, enc = s[:-20], s[-20:]
    h = z85_decode(enc).hex()
    name = "deletion_vector_%s-%s-%s-%s-%s.bin" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
    return os.path.join(table, prefix, name) if prefix else os.path.join(table, name)


def dv_bytes(table, d):
    with open(dv_file(table, d), "rb") as f:
        f.seek(d.get("offset", 1))
        size = int.from_bytes(f.read(4), "big")
        assert size == d["sizeInBytes"], (size, d)
        return f.read(size)


def convert(src, dst, kind):
    """Copy table src to dst with every "u" vector of the log stored as kind ("i" or "p")."""
    shutil.copytree(src, dst)
    log = os.path.join(dst, "_delta_log")
    for name in sorted(os.listdir(log)):
        if not name.endswith(".json"):
            if name.endswith(".parquet") or name == "_last_checkpoint" or name.endswith(".crc"):
                os.remove(os.path.join(log, name))
            continue
        lines = []
        with open(os.path.join(log, name)) as f:
            for line in f:
                a = json.loads(line)
                for k in ("add", "remove"):
                    d = a.get(k, {}).get("deletionVector")
                    if d and d["storageType"] == "u":
                        if kind == "i":
                            raw = dv_bytes(src, d)
                            nd = {"storageType": "i", "pathOrInlineDv": z85_encode(raw), "sizeInBytes": len(raw), "cardinality": d["cardinality"]}
                        else:
                            nd = dict(d, storageType="p", pathOrInlineDv="file://" + dv_file(dst, d))
                        if "maxRowIndex" in d:
                            nd["maxRowIndex"] = d["maxRowIndex"]
                        a[k]["deletionVector"] = nd
                lines.append(json.dumps(a))
        with open(os.path.join(log, name), "w") as f:
            f.write("\n".join(lines) + "\n")


def canon_row(d):
    return json.dumps(d, sort_keys=True)


def write_rows(path, rows):
    with open(path, "w") as f:
        for r in sorted(canon_row(x) for x in rows):
            f.write(r + "\n")


def spark_rows(df):
    return [r.asDict(recursive=True) for r in df.collect()]


def log_stats(table):
    kinds, cards = {}, []
    log = os.path.join(table, "_delta_log")
    for name in sorted(os.listdir(log)):
        if name.endswith(".json"):
            with open(os.path.join(log, name)) as f:
                for line in f:
                    d = json.loads(line).get("add", {}).get("deletionVector")
                    if d:
                        kinds[d["storageType"]] = kinds.get(d["storageType"], 0) + 1
                        cards.append(d["cardinality"])
    return kinds, max(cards or [0])


def make(base, s):
    from pyspark.sql import functions as F

    p = os.path.join(base, "dv")
    expect = os.path.join(base, "expect")
    os.makedirs(expect, exist_ok=True)

    def rows(lo, hi, part):
        return s.range(lo, hi).select(F.col("id"), F.lit(part).alias("part"), F.concat(F.lit("s"), F.col("id").cast("string")).alias("s"), (F.col("id") * 0.5).alias("v"))

    # Small row groups (about 100 rows) in partition a: row indexes must count across them.
    hconf = s.sparkContext._jsc.hadoopConfiguration()
    s.sql(f"CREATE TABLE delta.`{p}` (id BIGINT, part STRING, s STRING, v DOUBLE) USING delta PARTITIONED BY (part) "
          "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '1000')")  # v0
    hconf.set("parquet.block.size", "1024")
    rows(0, 1500, "a").coalesce(1).write.format("delta").mode("append").save(p)  # v1
    hconf.unset("parquet.block.size")
    rows(1500, 12000, "b").coalesce(1).write.format("delta").mode("append").save(p)  # v2: one file, 10500 rows
    s.sql(f"DELETE FROM delta.`{p}` WHERE id % 5 = 0 OR (id BETWEEN 200 AND 450) OR (part = 'b' AND id % 2 = 0)")  # v3
    s.sql(f"UPDATE delta.`{p}` SET v = -v, s = concat(s, '-u') WHERE id % 11 = 3")  # v4
    rows(0, 3000, "a").where("id % 7 = 1").withColumn("v", F.lit(99.0)).union(rows(20000, 20010, "a")).createOrReplaceTempView("src")
    s.sql(f"""MERGE INTO delta.`{p}` t USING src ON t.id = src.id AND t.part = src.part
              WHEN MATCHED AND t.id % 3 = 0 THEN DELETE
              WHEN MATCHED THEN UPDATE SET v = src.v
              WHEN NOT MATCHED THEN INSERT *""")  # v5
    s.sql(f"DELETE FROM delta.`{p}` WHERE id % 13 = 1")  # v6: new vectors for files that have one
    rows(30000, 30100, "b").coalesce(1).write.format("delta").mode("append").save(p)  # v7
    versions = s.sql(f"DESCRIBE HISTORY delta.`{p}`").agg(F.max("version")).collect()[0][0]
    for v in range(versions + 1):
        write_rows(os.path.join(expect, "dv@%d.json" % v), spark_rows(s.read.format("delta").option("versionAsOf", v).load(p)))
    kinds, maxcard = log_stats(p)
    groups = max(pq.ParquetFile(os.path.join(dp, f)).num_row_groups for dp, _, fs in os.walk(p) for f in fs if f.endswith(".parquet") and "_delta_log" not in dp)
    print("stats kinds=%s maxcard=%d maxrowgroups=%d" % (json.dumps(kinds, sort_keys=True), maxcard, groups))
    print("versions %d" % versions)

    for kind, name in (("i", "dv_inline"), ("p", "dv_abs")):
        q = os.path.join(base, name)
        convert(p, q, kind)
        write_rows(os.path.join(expect, name + ".json"), spark_rows(s.read.format("delta").load(q)))
        print("stats %s kinds=%s" % (name, json.dumps(log_stats(q)[0], sort_keys=True)))

    # A copy for write-delta, which checkpoints at version 10.
    q = os.path.join(base, "dv_ckpt")
    shutil.copytree(p, q)
    s.sql(f"ALTER TABLE delta.`{q}` SET TBLPROPERTIES ('delta.checkpointInterval' = '10')")
    write_rows(os.path.join(expect, "dv_ckpt_before.json"), spark_rows(s.read.format("delta").load(q)))

    # Spark's stream from version 0, skipping every commit that changes existing rows.
    out = os.path.join(base, "skip_out")
    q = (s.readStream.format("delta").option("startingVersion", 0).option("skipChangeCommits", "true").load(p)
         .writeStream.format("parquet").option("checkpointLocation", os.path.join(base, "skip_ckpt")).trigger(availableNow=True).start(out))
    q.awaitTermination()
    write_rows(os.path.join(expect, "dv_skip.json"), spark_rows(s.read.parquet(out)))

    sc = pa.schema([("id", pa.int64()), ("part", pa.string()), ("s", pa.string()), ("v", pa.float64())])
    new = pa.table({"id": pa.array(range(50000, 50050), pa.int64()), "part": ["a", "b"] * 25,
                    "s": ["n%d" % i for i in range(50)], "v": pa.array([float(i) for i in range(50)])}, schema=sc)
    with ipc.new_stream(os.path.join(base, "append.arrows"), sc) as w:
        w.write_table(new)


def compare(expect, out):
    with open(expect) as f:
        want = [l.rstrip("\n") for l in f if l.strip()]
    with open(out, "rb") as f:
        got = ipc.open_stream(f).read_all()
    g = sorted(canon_row(r) for r in got.to_pylist())
    if g == want:
        print("ok %s %d" % (os.path.basename(expect), len(g)))
        return
    missing = sorted(set(want) - set(g))[:3]
    extra = sorted(set(g) - set(want))[:3]
    print("diff %s: read-delta %d rows, expected %d; missing %s; extra %s" % (os.path.basename(expect), len(g), len(want), missing, extra))


def main():
    base = sys.argv[1]
    s = None
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] in ("make", "spark") and s is None:
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))
            import spark_delta

            s = spark_delta.session(app_name="dv-fixtures")
        if cmd[0] == "make":
            make(base, s)
        elif cmd[0] == "compare":
            compare(cmd[1], cmd[2])
        elif cmd[0] == "spark":
            df = s.read.format("delta").load(cmd[1])
            if len(cmd) > 3:
                df = df.where(" ".join(cmd[3:]))
            write_rows(os.path.join(base, "expect", cmd[2] + ".json"), spark_rows(df))
        elif cmd[0] == "deltars":
            from deltalake import DeltaTable

            write_rows(os.path.join(base, "expect", cmd[2] + ".json"), DeltaTable(cmd[1]).to_pyarrow_table().to_pylist())
        else:
            print("unknown command %s" % cmd[0])
        print("done", flush=True)
    if s is not None:
        s.stop()


if __name__ == "__main__":
    import traceback

    code = 0
    try:
        main()
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
