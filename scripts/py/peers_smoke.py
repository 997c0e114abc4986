"""Smoke test of the Python peers: pyarrow IPC with per-batch custom metadata,
delta-rs write/read, DuckDB delta_scan, fastavro. Exits non-zero on failure.

Run: .venv/bin/python scripts/py/peers_smoke.py
"""

import io
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402


def check_ipc():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    data = pa.record_batch([pa.array([1, 2, 3]), pa.array(["a", "b", "c"])], schema=schema)
    barrier = pa.record_batch([pa.array([], pa.int64()), pa.array([], pa.string())], schema=schema)
    sink = io.BytesIO()
    with ipc.new_stream(sink, schema) as w:
        w.write_batch(data)
        w.write_batch(barrier, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": "1"})
    r = ipc.open_stream(sink.getvalue())
    b1, m1 = r.read_next_batch_with_custom_metadata()
    b2, m2 = r.read_next_batch_with_custom_metadata()
    assert b1.num_rows == 3 and (m1 is None or len(m1) == 0), (b1.num_rows, m1)
    assert b2.num_rows == 0, b2.num_rows
    md = {k.decode(): v.decode() for k, v in m2.items()}
    assert md == {"streamkit.control": "barrier", "streamkit.epoch": "1"}, md
    try:
        r.read_next_batch_with_custom_metadata()
        raise AssertionError("expected end of stream")
    except StopIteration:
        pass
    print(f"ok pyarrow {pa.__version__}: IPC stream with per-batch custom_metadata")


def check_delta(tmp):
    import deltalake
    from deltalake import DeltaTable, write_deltalake

    path = os.path.join(tmp, "tbl")
    t = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["x", "y", "z"])})
    write_deltalake(path, t)
    write_deltalake(path, t.slice(0, 1), mode="append")
    dt = DeltaTable(path)
    got = dt.to_pyarrow_table()
    assert got.num_rows == 4, got.num_rows
    assert dt.version() == 1, dt.version()
    assert len(dt.history()) == 2
    p = dt.protocol()
    print(f"ok deltalake {deltalake.__version__}: wrote+read {got.num_rows} rows, version {dt.version()}, "
          f"protocol r{p.min_reader_version}/w{p.min_writer_version}")
    return path


def check_duckdb(path):
    import duckdb

    import duckdb_delta

    con = duckdb_delta.connect(httpfs=True)
    uri = duckdb_delta.table_uri(path)
    n, s = con.execute(f"SELECT count(*), sum(id) FROM delta_scan('{uri}')").fetchone()
    assert (n, s) == (4, 7), (n, s)
    print(f"ok duckdb {duckdb.__version__}: delta and httpfs extensions loaded from {duckdb_delta.extension_path()}, "
          f"delta_scan read {n} rows")


def check_avro(tmp):
    import fastavro

    schema = fastavro.parse_schema({
        "type": "record", "name": "R",
        "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}],
    })
    recs = [{"id": i, "s": str(i)} for i in range(5)]
    path = os.path.join(tmp, "r.avro")
    with open(path, "wb") as f:
        fastavro.writer(f, schema, recs)
    with open(path, "rb") as f:
        got = list(fastavro.reader(f))
    assert got == recs
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, recs[0])
    assert fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), schema, schema) == recs[0]
    print(f"ok fastavro {fastavro.__version__}: container file and schemaless round trip")


def check_confluent_kafka():
    import confluent_kafka

    lib, _ = confluent_kafka.libversion()
    major, minor = (int(x) for x in lib.split(".")[:2])
    assert (major, minor) >= (2, 6), f"librdkafka {lib} < 2.6.1 cannot do SCRAM with Kafka 4.x"
    print(f"ok confluent-kafka {confluent_kafka.__version__} (librdkafka {lib})")


def main():
    check_ipc()
    check_confluent_kafka()
    with tempfile.TemporaryDirectory() as tmp:
        path = check_delta(tmp)
        check_duckdb(path)
        check_avro(tmp)
    print("python peers: all ok")


if __name__ == "__main__":
    main()
