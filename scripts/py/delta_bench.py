"""Benchmark helpers for tools/writedelta (BenchmarkWriteDeltaVsDeltaRS).

    delta_bench.py prepare OUT.arrows --rows N [--source flights-3m.parquet]
                   [--epoch-rows M] [--batch-rows K]
        Writes an Arrow IPC stream for `streamkit write-delta`: the flights schema (date
        timestamp, delay, distance, origin, destination), batches of K rows, a barrier every M
        rows and end=final. With --source (vega-datasets flights-3m.parquet) the real rows are
        used (repeated when N exceeds them); otherwise deterministic synthetic flights.
        Prints {"rows": N, "source": ...}.

    delta_bench.py deltars TABLE IN.arrows
        Reads the same stream into memory (control batches are empty and dropped) and times
        deltalake.write_deltalake(TABLE, table) alone. Prints {"rows", "seconds",
        "cpu_seconds"} (CPU of the whole process during the write, all delta-rs threads).
"""

import json
import resource
import sys
import time

import pyarrow as pa
import pyarrow.ipc as ipc

SCHEMA = pa.schema([
    ("date", pa.timestamp("us")),
    ("delay", pa.int64()),
    ("distance", pa.int64()),
    ("origin", pa.string()),
    ("destination", pa.string()),
])

AIRPORTS = ["ATL", "DFW", "DEN", "ORD", "LAX", "JFK", "LAS", "MCO", "MIA", "CLT", "SEA", "PHX", "EWR", "SFO", "IAH", "BOS"]


def synthetic(n):
    import pyarrow.compute as pc

    idx = pa.array(range(n), pa.int64())
    x = pc.bit_wise_and(pc.multiply(pc.add(idx, 7), 2654435761), 0xFFFFFFFF)
    air = pa.array(AIRPORTS)
    return pa.table({
        "date": pc.cast(pc.add(pc.multiply(idx, 60_000_000), 1704067200_000000), pa.timestamp("us")),
        "delay": pc.subtract(pc.bit_wise_and(x, 255), 20),
        "distance": pc.add(pc.bit_wise_and(pc.shift_right(x, 8), 2047), 50),
        "origin": air.take(pc.bit_wise_and(x, 15)),
        "destination": air.take(pc.bit_wise_and(pc.shift_right(x, 4), 15)),
    }, schema=SCHEMA)


def prepare(argv):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--source")
    ap.add_argument("--epoch-rows", type=int, default=1 << 20)
    ap.add_argument("--batch-rows", type=int, default=1 << 16)
    a = ap.parse_args(argv)
    if a.source:
        import pyarrow.parquet as pq

        src = pq.read_table(a.source).cast(SCHEMA)
        parts, have = [], 0
        while have < a.rows:
            take = min(src.num_rows, a.rows - have)
            parts.append(src.slice(0, take))
            have += take
        t = pa.concat_tables(parts)
    else:
        t = synthetic(a.rows)
    empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in SCHEMA], schema=SCHEMA)
    with open(a.out, "wb") as f, ipc.new_stream(f, SCHEMA) as w:
        epoch, in_epoch = 1, 0
        for b in t.combine_chunks().to_batches(max_chunksize=a.batch_rows):
            w.write_batch(b)
            in_epoch += b.num_rows
            if in_epoch >= a.epoch_rows:
                w.write_batch(empty, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": str(epoch)})
                epoch, in_epoch = epoch + 1, 0
        if in_epoch:
            w.write_batch(empty, custom_metadata={"streamkit.control": "barrier", "streamkit.epoch": str(epoch)})
        w.write_batch(empty, custom_metadata={"streamkit.control": "end", "streamkit.end": "final"})
    print(json.dumps({"rows": t.num_rows, "source": a.source or "synthetic"}))


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def deltars(argv):
    from deltalake import write_deltalake

    table, path = argv
    with open(path, "rb") as f:
        t = ipc.open_stream(f).read_all()
    t = t.combine_chunks()
    t0, c0 = time.perf_counter(), cpu()
    write_deltalake(table, t)
    t1, c1 = time.perf_counter(), cpu()
    print(json.dumps({"rows": t.num_rows, "seconds": t1 - t0, "cpu_seconds": c1 - c0}))


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"prepare": prepare, "deltars": deltars}[cmd](rest)
