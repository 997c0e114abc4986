"""Input and oracle of e2e/bigstate_test.go (issue #17: window state larger than 2 GiB).

    bigstate.py generate DIR FILES ROWS VALUE_BYTES
        writes DIR/part-NN.parquet: FILES files of ROWS rows (id int64 unique over all files,
        ts timestamp[us, UTC] = 2024-01-01 + id seconds, s = a string of VALUE_BYTES naming id).
    bigstate.py check DIR TABLE
        DuckDB: the window table must hold one row per id of the input, with first(s) and
        count equal to DuckDB's GROUP BY id over the input files. Prints a JSON summary.
"""
import datetime
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py"))
import duckdb_delta  # noqa: E402


def generate(out, files, rows, size):
    os.makedirs(out, exist_ok=True)
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    for f in range(files):
        ids = list(range(f * rows, (f + 1) * rows))
        tbl = pa.table({
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array([base + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("us", tz="UTC")),
            "s": pa.array([("%08d" % i) * (size // 8) for i in ids], pa.string()),
        })
        pq.write_table(tbl, os.path.join(out, "part-%02d.parquet" % f))


def check(inp, table):
    con = duckdb_delta.connect()
    con.execute("SET TimeZone='UTC'")
    glob = os.path.join(inp, "*.parquet").replace("'", "''")
    uri = duckdb_delta.table_uri(table).replace("'", "''")
    con.sql(f"CREATE TABLE want AS SELECT id, md5(first(s)) AS h, count(*) AS n FROM read_parquet('{glob}') GROUP BY id")
    con.sql(f"CREATE TABLE got AS SELECT id, md5(s) AS h, count AS n FROM delta_scan('{uri}')")
    res = {
        "want_rows": con.sql("SELECT count(*) FROM want").fetchone()[0],
        "got_rows": con.sql("SELECT count(*) FROM got").fetchone()[0],
        "got_ids": con.sql("SELECT count(DISTINCT id) FROM got").fetchone()[0],
        "mismatches": con.sql("SELECT count(*) FROM want FULL OUTER JOIN got USING (id) "
                              "WHERE want.h IS DISTINCT FROM got.h OR want.n IS DISTINCT FROM got.n").fetchone()[0],
        "input_bytes": con.sql(f"SELECT sum(strlen(s)) FROM read_parquet('{glob}')").fetchone()[0],
    }
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: bigstate.py generate DIR FILES ROWS VALUE_BYTES | check DIR TABLE")
