"""Create a Delta table with delta-rs (deltalake.write_deltalake) for the append test.

Usage: deltars_create.py TABLE EXPECTED.arrow
Writes two commits (partitioned by "region"), and the rows as an Arrow IPC file.
"""
import datetime
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
from deltalake import write_deltalake

path, expected = sys.argv[1], sys.argv[2]
utc = datetime.timezone.utc
t = pa.table(
    {
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "region": pa.array(["eu", "us", "eu", None], pa.string()),
        "amount": pa.array([1.5, None, 3.25, 4.0], pa.float64()),
        "ts": pa.array(
            [datetime.datetime(2024, 1, 31, 12, 0, 0, 123456, tzinfo=utc)] * 4,
            pa.timestamp("us", tz="UTC"),
        ),
    }
)
write_deltalake(path, t.slice(0, 2), partition_by=["region"])
write_deltalake(path, t.slice(2), partition_by=["region"], mode="append")
with ipc.new_file(expected, t.schema) as w:
    w.write_table(t)
print("ok")
