"""Bronze appender and DuckDB checks for the bronze -> silver test.

    bronze.py append TABLE COMMITS ROWS SEED DELAY_S   append COMMITS commits of ROWS rows with
                                                       delta-rs, DELAY_S apart; rows repeat (the
                                                       same id always has the same values), so
                                                       bronze holds exact duplicates
    bronze.py check BRONZE SILVER                      DuckDB: silver == SELECT DISTINCT * FROM
                                                       bronze, and silver has no duplicate row;
                                                       prints "distinct N silver M dup D missing
                                                       X extra Y"
"""
import datetime
import os
import random
import sys
import time

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))

UTC = datetime.timezone.utc


def row(i):
    return {
        "id": i,
        "region": ["eu", "us", "ap"][i % 3],
        "amount": (i * 37 % 1000) / 10.0,
        "ts": datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=i),
        "tags": ["t%d" % (i % 4)] if i % 5 else None,
    }


SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("amount", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tags", pa.list_(pa.string())),
    ]
)


def append(table, commits, rows, seed, delay):
    from deltalake import write_deltalake

    rnd = random.Random(seed)
    for c in range(commits):
        ids = [rnd.randrange(0, commits * rows // 2) for _ in range(rows)]
        t = pa.Table.from_pylist([row(i) for i in ids], SCHEMA)
        write_deltalake(table, t, mode="append", partition_by=["region"])
        time.sleep(delay)
    print("appended", commits)


def check(bronze, silver):
    import duckdb_delta

    con = duckdb_delta.connect()
    b = "delta_scan('%s')" % duckdb_delta.table_uri(bronze)
    s = "delta_scan('%s')" % duckdb_delta.table_uri(silver)
    cols = "id, region, amount, ts, tags"
    distinct = con.sql("SELECT count(*) FROM (SELECT DISTINCT %s FROM %s)" % (cols, b)).fetchone()[0]
    total = con.sql("SELECT count(*) FROM %s" % s).fetchone()[0]
    dup = con.sql("SELECT count(*) FROM (SELECT %s, count(*) c FROM %s GROUP BY ALL HAVING c > 1)" % (cols, s)).fetchone()[0]
    missing = con.sql("SELECT count(*) FROM (SELECT DISTINCT %s FROM %s EXCEPT SELECT %s FROM %s)" % (cols, b, cols, s)).fetchone()[0]
    extra = con.sql("SELECT count(*) FROM (SELECT %s FROM %s EXCEPT SELECT %s FROM %s)" % (cols, s, cols, b)).fetchone()[0]
    print("distinct %d silver %d dup %d missing %d extra %d" % (distinct, total, dup, missing, extra))



def _hard_exit(run):
    """Run run() and leave with its status through os._exit: delta-rs and pyarrow threads can
    abort the interpreter's own shutdown ("terminate called without an active exception") after
    the work is done, which would turn a passing check into a crash."""
    import os as _os, traceback as _tb
    code = 0
    try:
        run()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            code = 1
        else:
            code = e.code or 0
    except BaseException:
        _tb.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _os._exit(code)


def _run():
    if sys.argv[1] == "append":
        append(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    _hard_exit(_run)
