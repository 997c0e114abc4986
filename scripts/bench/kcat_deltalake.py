"""The kcat | python deltalake baseline of make bench (W1; scripts/bench/kcat-deltalake.sh).

    kcat -C -b B -t bench-w1 -o beginning -e -J -q | python kcat_deltalake.py TABLE [BATCH_ROWS]

Reads kcat's JSON envelopes ({"topic", "partition", "offset", "payload": "<the JSON value>", …})
from stdin in batches of BATCH_ROWS lines (default 1,000,000), parses them with Arrow's C++ JSON
reader (pyarrow.json: the envelopes, then the payload strings, explicit schema, timestamps
ISO 8601 → timestamp[us, UTC]) and appends each batch to the Delta table TABLE with delta-rs
(deltalake.write_deltalake, one commit per batch). Columns: the 7 bid fields, partition int32,
offset int64 — the W1 output of BENCH_SPEC. TABLE may be a bucket URL (s3://bucket/path):
delta-rs then gets storage_options from the AWS_* environment (endpoint, keys, region,
AWS_ALLOW_HTTP), as scripts/py/bucket_delta.py, never from argv; its commits are conditional
puts.
"""
import io
import itertools
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from deltalake import write_deltalake

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "py"))

ENVELOPE = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("payload", pa.string())])
BID = pa.schema([("auction", pa.int64()), ("bidder", pa.int64()), ("price", pa.int64()),
                 ("channel", pa.string()), ("url", pa.string()),
                 ("date_time", pa.timestamp("us", tz="UTC")), ("extra", pa.string())])


def parse(buf, schema):
    return pj.read_json(io.BytesIO(buf), parse_options=pj.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="ignore"),
        read_options=pj.ReadOptions(block_size=16 << 20))


def lines_of(col):
    """The strings of col, each followed by a newline, as one buffer (no Python strings)."""
    a = pc.binary_join_element_wise(col, pa.scalar(""), "\n").combine_chunks()
    t = pa.int64() if a.type == pa.large_string() else pa.int32()
    offs = pa.Array.from_buffers(t, len(a) + 1, [None, a.buffers()[1]], offset=a.offset)
    return a.buffers()[2][offs[0].as_py():offs[len(a)].as_py()]


def main():
    table = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    so = None
    if "://" in table and not table.startswith("file://"):
        import bucket_delta

        so = bucket_delta.storage_options()
    stdin = sys.stdin.buffer
    total = 0
    while True:
        chunk = b"".join(itertools.islice(stdin, n))
        if not chunk:
            break
        env = parse(chunk, ENVELOPE)
        payload = env.column("payload")
        if payload.null_count:
            sys.exit(f"kcat_deltalake.py: {payload.null_count} records without a value near row {total}")
        bids = parse(lines_of(payload), BID)
        if bids.num_rows != env.num_rows:
            sys.exit(f"kcat_deltalake.py: {env.num_rows} records but {bids.num_rows} parsed values near row {total}")
        out = pa.Table.from_arrays(bids.columns + [env.column("partition"), env.column("offset")],
                                   names=BID.names + ["partition", "offset"])
        write_deltalake(table, out, mode="append", storage_options=so)
        total += out.num_rows
    print(f"kcat_deltalake.py: {total} rows into {table}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(0)  # delta-rs/pyarrow threads can abort a normal interpreter shutdown


if __name__ == "__main__":
    main()
