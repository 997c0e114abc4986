"""Tables and DuckDB checks for backfill's end-to-end tests.

    flows.py history TABLE FROM TO                 one delta-rs commit with ids FROM..TO-1
    flows.py append TABLE COMMITS ROWS START DELAY_S
                                                   COMMITS delta-rs commits of ROWS new ids each,
                                                   from START on, DELAY_S apart (a live source)
    flows.py check TABLE                           DuckDB over the table: prints JSON
                                                   {rows, distinct_ids, dup_ids, by_source: {...}}
"""
import datetime
import json
import os
import sys
import time

import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "py"))

UTC = datetime.timezone.utc
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("v", pa.string())])


def rows(ids):
    t0 = datetime.datetime(2024, 6, 1, tzinfo=UTC)
    return pa.Table.from_pylist([{"id": i, "ts": t0 + datetime.timedelta(minutes=i), "v": "v%d" % i} for i in ids], SCHEMA)


def main():
    cmd = sys.argv[1]
    if cmd == "history":
        from deltalake import write_deltalake

        write_deltalake(sys.argv[2], rows(range(int(sys.argv[3]), int(sys.argv[4]))), mode="append")
    elif cmd == "append":
        from deltalake import write_deltalake

        table, commits, n, start, delay = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
        for c in range(commits):
            write_deltalake(table, rows(range(start + c * n, start + (c + 1) * n)), mode="append")
            time.sleep(delay)
    elif cmd == "check":
        import duckdb_delta

        con = duckdb_delta.connect()
        t = "delta_scan('%s')" % duckdb_delta.table_uri(sys.argv[2])
        out = {
            "rows": con.sql("SELECT count(*) FROM %s" % t).fetchone()[0],
            "distinct_ids": con.sql("SELECT count(DISTINCT id) FROM %s" % t).fetchone()[0],
            "dup_ids": con.sql("SELECT count(*) FROM (SELECT id FROM %s GROUP BY id HAVING count(*) > 1)" % t).fetchone()[0],
            "by_source": dict(con.sql("SELECT coalesce(record_source, 'none'), count(*) FROM %s GROUP BY ALL" % t).fetchall()),
            "min_id": con.sql("SELECT min(id) FROM %s" % t).fetchone()[0],
            "max_id": con.sql("SELECT max(id) FROM %s" % t).fetchone()[0],
        }
        print(json.dumps(out, sort_keys=True))



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
    main()


if __name__ == "__main__":
    _hard_exit(_run)
