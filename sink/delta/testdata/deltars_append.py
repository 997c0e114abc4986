"""Append rows to an existing Delta table with delta-rs, one commit per row, as fast as it can
(run concurrently with streamkit's writer to exercise put-if-absent and conflict retries).

Usage: deltars_append.py TABLE N FIRST_ID EXPECTED.arrow
Rows: id = FIRST_ID + i, part = "rs", v = i + 0.5. Writes the rows as an Arrow IPC file.
"""
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
from deltalake import write_deltalake

path, n, first, expected = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("v", pa.float64())])
tables = []
for i in range(n):
    t = pa.table({"id": [first + i], "part": ["rs"], "v": [i + 0.5]}, schema=schema)
    write_deltalake(path, t, mode="append")
    tables.append(t)
with ipc.new_file(expected, schema) as w:
    w.write_table(pa.concat_tables(tables))
print("ok appended %d" % n)
