"""Reference side of tools/select's Spark agreement test: for each case, applies its filter
and select stages with pyspark (one local session, ANSI mode, UTC) to the same Parquet files
that the streamkit binary read, reads the Arrow IPC stream streamkit wrote, and compares the
two results as multisets of rows (the column names in order, then the values in one canonical
text form). Writes {case id: {"ok": true} | {"diff": "..."}} as JSON.

usage: spark_agree.py DATA_GLOB SPEC.json OUT.json"""
import datetime
import decimal
import json
import math
import sys
import time

import pyarrow as pa
import pyarrow.ipc


def canon(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "b:" + str(v).lower()
    if isinstance(v, int):
        return "n:" + str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "f:NaN"
        return "f:" + repr(v)
    if isinstance(v, decimal.Decimal):
        # a decimal and an integer of one value agree (Spark may type a result decimal(p,0))
        return "n:" + (format(v.normalize(), "f") if v != 0 else "0")
    if isinstance(v, str):
        return "s:" + v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return "t:" + v.isoformat(sep=" ", timespec="microseconds")
    if isinstance(v, datetime.date):
        return "d:" + v.isoformat()
    return "?:" + repr(v)


def main():
    t0 = time.time()
    data, spec_path, out_path = sys.argv[1:4]
    spec = json.load(open(spec_path))
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    s = (SparkSession.builder.master("local[1]").config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.ansi.enabled", "true").getOrCreate())
    s.sparkContext.setLogLevel("OFF")
    # read-files adds the (here always null) _rescued_data column; the Spark side gets it too
    base = s.read.parquet(data).withColumn("_rescued_data", F.lit(None).cast("string")).cache()
    base.count()
    out = {}
    for case in spec:
        try:
            df = base
            for k, st in enumerate(case["stages"]):
                if st["kind"] == "filter":
                    df = df.filter(st["expr"])
                else:
                    view = f"v_{case['id']}_{k}"
                    df.createOrReplaceTempView(view)
                    df = s.sql(f"SELECT {st['expr']} FROM {view}")
            want_names = df.columns
            want = sorted(tuple(canon(v) for v in r) for r in df.collect())
        except Exception as ex:  # noqa: BLE001 - the message is the result
            out[case["id"]] = {"diff": "pyspark failed: " + str(ex).split("\n")[0]}
            continue
        with pa.OSFile(case["out"], "rb") as f:
            table = pa.ipc.open_stream(f).read_all()
        got_names = table.column_names
        got = sorted(tuple(canon(v) for v in r) for r in zip(*[c.to_pylist() for c in table.columns])) if table.num_columns else []
        if got_names != want_names:
            out[case["id"]] = {"diff": f"columns: streamkit {got_names}, pyspark {want_names}"}
        elif got != want:
            from collections import Counter
            g, w = Counter(got), Counter(want)
            only_got = list((g - w).elements())[:3]
            only_want = list((w - g).elements())[:3]
            out[case["id"]] = {"diff": f"{len(got)} rows vs pyspark's {len(want)}; only in streamkit: {only_got}; only in pyspark: {only_want}"}
        else:
            out[case["id"]] = {"ok": True, "rows": len(got)}
    s.stop()
    json.dump(out, open(out_path, "w"))
    print(f"spark agreement: {len(spec)} cases in {time.time() - t0:.1f}s", file=sys.stderr)


main()
