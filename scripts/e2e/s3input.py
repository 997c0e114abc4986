"""DuckDB over the input files of e2e/s3_test.go's chaos run, in the bucket of the S3 test server.

    s3input.py input-ids GLOB     {"rows": N, "ids": [distinct id, sorted]}

GLOB is s3://BUCKET/in/*.json (newline-delimited JSON objects with an int64 id). DuckDB reaches
the server as scripts/py/bucket_delta.py sets it up (httpfs, an S3 secret from the AWS_*
environment, never argv).
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "py"))

import bucket_delta  # noqa: E402


def input_ids(glob):
    rel = "read_json('%s', format='newline_delimited', columns={'id': 'BIGINT'})" % glob.replace("'", "''")
    con = bucket_delta.duck()
    rows = con.sql(f"SELECT count(*) FROM {rel}").fetchone()[0]
    ids = [r[0] for r in con.sql(f"SELECT DISTINCT id FROM {rel} ORDER BY id").fetchall()]
    return {"rows": rows, "ids": ids}


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "input-ids":
        sys.exit(__doc__)
    sys.stdout.write(json.dumps(input_ids(sys.argv[2])))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
