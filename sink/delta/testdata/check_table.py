"""Read a Delta table with real readers and compare it row by row with expected data.

Usage: check_table.py TABLE EXPECTED.arrow[,EXPECTED2.arrow...] --key COL
           [--readers deltalake,duckdb] [--empty-as-null COL ...] [--columns COL,...]

--empty-as-null COL: in the expected rows, an empty string in COL becomes null (Delta reads
an empty partition value as null).

EXPECTED files are Arrow IPC files (file format) holding the rows the table should contain.
Both sides are normalized to plain Python values (timestamps to UTC ISO strings, decimals to
strings, NaN/Inf to strings, maps to sorted pairs) and sorted by KEY. Prints "ok READER N rows"
per reader; exits 1 with a diff on the first mismatch.
"""
import argparse
import datetime
import decimal
import glob
import math
import os
import sys

import pyarrow as pa
import pyarrow.ipc as ipc


def norm(v):
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Inf" if v > 0 else "-Inf"
        return v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return "Z" + v.isoformat(timespec="microseconds")
        return "L" + v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return format(v.normalize(), "f") if v == v else str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return sorted([[norm(a), norm(b)] for a, b in v], key=repr)
        return [norm(x) for x in v]
    if isinstance(v, tuple):
        return [norm(x) for x in v]
    return v


def rows(table, key, empty_as_null, columns):
    out = []
    for r in table.to_pylist():
        r = {k: norm(v) for k, v in r.items() if columns is None or k in columns}
        for c in empty_as_null:
            if r.get(c) == "":
                r[c] = None
        out.append(r)
    out.sort(key=lambda r: repr(r[key]))
    return out


def read_expected(paths):
    tables = []
    for p in paths.split(","):
        with pa.memory_map(p) as src:
            tables.append(ipc.open_file(src).read_all())
    return tables


def read_deltalake(path):
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_table()


def read_duckdb(path):
    return _duck().execute("SELECT * FROM delta_scan(?)", [os.path.abspath(path)]).to_arrow_table()


def probe(path, tables, cols):
    """Filtered DuckDB scans use the file statistics to skip files: wrong min/max would drop rows."""
    t = pa.concat_tables([x.select(cols) for x in tables]) if len(tables) > 1 else tables[0].select(cols)
    con = _duck()
    for c in cols:
        col = t.column(c)
        vals = [v for v in col.to_pylist() if v is not None and not (isinstance(v, float) and v != v)]
        vals = sorted(set(vals), key=repr)
        picks = vals[:2] + vals[len(vals) // 2: len(vals) // 2 + 1] + vals[-2:]
        for v in picks:
            want_eq = sum(1 for x in col.to_pylist() if x == v)
            q = 'SELECT count(*) FROM delta_scan(?) WHERE "%s" = ?' % c
            got_eq = con.execute(q, [os.path.abspath(path), v]).fetchone()[0]
            want_ge = sum(1 for x in col.to_pylist() if x is not None and not (isinstance(x, float) and x != x) and x >= v)
            q = 'SELECT count(*) FROM delta_scan(?) WHERE "%s" >= ? AND NOT isnan(try_cast("%s" AS DOUBLE))' % (c, c) \
                if pa.types.is_floating(col.type) else 'SELECT count(*) FROM delta_scan(?) WHERE "%s" >= ?' % c
            got_ge = con.execute(q, [os.path.abspath(path), v]).fetchone()[0]
            if (got_eq, got_ge) != (want_eq, want_ge):
                print("duckdb probe %s = / >= %r: got %d/%d rows, want %d/%d" % (c, v, got_eq, got_ge, want_eq, want_ge))
                sys.exit(1)
    print("ok duckdb probes %s" % ",".join(cols))


def _duck():
    import duckdb

    site = os.path.dirname(os.path.dirname(duckdb.__file__))
    ext = glob.glob(os.path.join(site, "duckdb_extension_delta", "extensions", "*", "delta.duckdb_extension"))
    if not ext:
        raise SystemExit("duckdb delta extension not found under " + site)
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    con.execute("SET TimeZone='UTC'")
    con.execute("LOAD '%s'" % ext[0].replace("'", "''"))
    return con


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("expected")
    ap.add_argument("--key", required=True)
    ap.add_argument("--readers", default="deltalake,duckdb")
    ap.add_argument("--empty-as-null", action="append", default=[])
    ap.add_argument("--columns", default=None)
    ap.add_argument("--probe", action="append", default=[],
                    help="column to probe with DuckDB equality and range filters (data skipping must not drop rows)")
    a = ap.parse_args()
    columns = set(a.columns.split(",")) if a.columns else None
    want = []
    for t in read_expected(a.expected):
        want += rows(t, a.key, a.empty_as_null, columns)
    want.sort(key=lambda r: repr(r[a.key]))
    readers = {"deltalake": read_deltalake, "duckdb": read_duckdb}
    for name in a.readers.split(","):
        got = rows(readers[name](a.table), a.key, [], columns)
        if len(got) != len(want):
            print("%s: %d rows, want %d" % (name, len(got), len(want)))
            sys.exit(1)
        for g, w in zip(got, want):
            if g != w:
                print("%s: row mismatch\n got: %r\nwant: %r" % (name, g, w))
                for k in sorted(set(g) | set(w)):
                    if g.get(k) != w.get(k):
                        print("  column %s: got %r want %r" % (k, g.get(k), w.get(k)))
                sys.exit(1)
        print("ok %s %d rows" % (name, len(got)))
    if a.probe:
        probe(a.table, read_expected(a.expected), a.probe)



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
