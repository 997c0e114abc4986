#!/usr/bin/env bash
# The fixture directory of the help and README examples (cmd/streamkit/examples_run_test.go):
# run once per test process with bash in an empty directory, the streamkit under test first on
# PATH, and in the environment
#   REPO          the repository root (for testdata/demo)
#   BROKER        the Kafka broker's host:port
#   ORDERS_TOPIC  a fresh topic this script fills and reads into ./ckpt/orders
# Every example then runs in a copy of the directory. It holds the files the examples name
# (data.csv, events/*.json, orders.json …), Delta tables under lake/ and archive/, the
# checkpoints ckpt/orders and ckpt/dedup, topics/<topic>.json (the records the test produces
# into a topic an example reads) and s3/<bucket>/ (the objects the test uploads into a fresh
# bucket standing for s3://<bucket>/). An example that names a new file usually needs only a
# line here. Everything is made by streamkit itself, from generate; independent parts run at
# the same time.
set -euo pipefail
unset STREAMKIT_CHECKPOINT # a stray checkpoint root must not catch the fixture's own runs
sk() { streamkit --progress off --log-level error "$@"; }

# parquet DEST: the Arrow stream on stdin as one Parquet file (written by write-delta).
parquet() {
  local t
  t=$(mktemp -d)
  sk write-delta "$t/t"
  local files=("$t"/t/*.parquet)
  [[ ${#files[@]} == 1 ]] || { echo "parquet $1: ${#files[@]} files" >&2; exit 1; }
  mkdir -p "$(dirname "$1")"
  cp "${files[0]}" "$1"
  rm -rf "$t"
}
# json DEST / csv DEST: the Arrow stream on stdin as JSON lines / CSV.
json() { mkdir -p "$(dirname "$1")"; sk print --format json > "$1"; }
csv() { mkdir -p "$(dirname "$1")"; sk print --format csv > "$1"; }

# bg CMD…: runs CMD in the background; await waits for all of them, failing when one failed.
pids=()
bg() { "$@" & pids+=($!); }
await() { for p in "${pids[@]}"; do wait "$p"; done; pids=(); }

# Orders: every column an orders example names (order_id, id, customer_id, user_id, region,
# amount, qty, ts), a date and a day to partition by (lake/orders: read-delta --where on date,
# delta optimize --where on day), in the types read-files infers from orders/*.csv, so that
# every orders file can be written into lake/orders.
ORDERS='order_id int, id int, customer_id int, user_id int, region string, amount double, qty int, ts timestamp, date date, day date'
orders() { # orders ROWS SEED [START [EXTRA FLAGS…]]
  local rows=$1 seed=$2 start=${3:-1}
  shift $(( $# < 3 ? $# : 3 ))
  sk generate --schema "$ORDERS" --rows "$rows" --seed "$seed" \
    --gen "order_id=sequence($start)" --gen "id=sequence($start)" --gen 'customer_id=uniform(1, 20)' \
    --gen 'user_id=uniform(1, 20)' --gen 'region=choice(eu, us, apac)' --gen 'amount=uniform(-10, 250)' \
    --gen 'qty=uniform(0, 5)' --gen 'ts=timestamp(2024-05-01T00:00:00Z, 1/s)' \
    --gen 'date=choice(2024-05-02, 2024-05-20, 2024-06-03)' --gen 'day=choice(2024-03-08, 2024-03-09)' "$@"
}
bg eval 'orders 40 1 | csv orders/part-0.csv'
bg eval 'orders 40 2 41 | csv orders/part-1.csv'
bg eval 'orders 40 3 | json orders/part-0.json'
bg eval 'orders 40 4 | parquet orders/part-0.parquet'
bg eval 'orders 40 5 | parquet backfill/part-0.parquet'
bg eval 'orders 40 6 | parquet archive/2023/01/part-0.parquet'
bg eval 'orders 40 7 41 | parquet archive/2023/02/part-0.parquet'
await

# data.csv, data.parquet: a generic table (ts for time filters, raw and _rescued_data for
# select's EXCEPT).
data() {
  sk generate --schema 'id bigint, user string, amount double, region string, ts timestamp, raw string, _rescued_data string' \
    --rows 50 --seed 8 --gen id=sequence --gen user=names --gen 'region=choice(eu, us)' \
    --gen 'ts=timestamp(2024-04-30T23:40:00Z, 1/min)' --gen '_rescued_data=constant(x) nulls=1'
}
bg eval 'data | sk select "* EXCEPT (_rescued_data)" | csv data.csv'
bg eval 'data | parquet data.parquet'

# Events: id, event_id, user_id, ts, with duplicates (dedup, keyby --shards).
events() {
  sk generate --schema 'id bigint, event_id bigint, user_id int, ts timestamp' --rows 60 --seed "$1" \
    --duplicates 0.2 --gen id=sequence --gen event_id=sequence --gen 'user_id=uniform(1, 5)' \
    --gen 'ts=timestamp(2024-05-01T00:00:00Z, 1/s, 5s)'
}
bg eval 'events 9 | json events/part-0.json'
bg eval 'events 10 | json events/part-1.json'
bg eval 'events 11 | json events.ndjson'
await

# JSON logs (print --show-control), sales (window global), readings (window count).
bg eval "sk generate --schema 'path string, user string, status int, ts timestamp' --rows 30 --seed 12 \
  --gen 'path=choice(/api/orders, /api/users, /health, /static/app.js)' --gen 'user=names nulls=0.2' \
  | json logs/part-0.json"
bg eval "sk generate --schema 'region string, amount double, ts timestamp' --rows 30 --seed 13 \
  --gen 'region=choice(eu, us, apac)' | json sales/part-0.json"
bg eval "sk generate --schema 'sensor string, value double, ts timestamp' --rows 300 --seed 14 \
  --gen 'sensor=choice(s1, s2, s3)' --gen 'value=normal(20, 3)' | csv readings/part-0.csv"
# landing/: JSON orders, an hour a day, one a minute (read-files with a checkpoint; the
# README's first pipeline: order_id, region, amount, ts).
landing() { # landing SEED DAY
  sk generate --schema 'order_id bigint, region string, amount double, ts timestamp' --rows 60 --seed "$1" \
    --gen "order_id=sequence($1)" --gen 'region=choice(eu, us, apac)' --gen 'amount=uniform(1, 250)' \
    --gen "ts=timestamp(2024-05-${2}T00:00:00Z, 1/min)" | json "landing/orders/2024/05/$2/part-0.json"
}
bg landing 1000 01
bg landing 2000 02
# in/*.csv.gz: id, amount, ts (read-files --follow with a DDL schema)
bg eval "orders 20 17 | sk select 'id, round(amount, 2) AS amount, ts' | csv in/part-0.csv && gzip in/part-0.csv"
await

# Flights: the demo's real flights (date, delay, distance, origin, destination).
cp "$REPO/testdata/demo/landing/flights-2001-part1.parquet" flights.parquet
cp flights.parquet flights-3m.parquet
mkdir -p flights testdata/demo
cp "$REPO"/testdata/demo/landing/*.parquet flights/
cp -r "$REPO/testdata/demo/landing" testdata/demo/landing

# orders.csv: a quantity of 0 on line 3 (the README's division-by-zero transcript).
printf 'id,qty\n1,2\n2,0\n3,1\n' > orders.csv

# Schema files of read-kafka --value-schema (DDL in a file, as the README describes).
echo 'order_id BIGINT, customer_id BIGINT, user_id BIGINT, region STRING, amount DOUBLE, qty INT' > orders.json
echo 'path STRING, user STRING, status INT' > logs.json
echo 'sensor_id STRING, sensor_type STRING' > hb.json

# make_arrow.py: a foreign producer of plain Arrow IPC (write-delta's help); it writes events
# with a new column (--merge-schema).
cat > make_arrow.py <<'EOF'
import sys, datetime as dt
import pyarrow as pa
t0 = dt.datetime(2024, 5, 1, 4, tzinfo=dt.timezone.utc)
batch = pa.record_batch({
    "id": pa.array(range(1000, 1010), pa.int64()),
    "event_id": pa.array(range(1000, 1010), pa.int64()),
    "ts": pa.array([t0 + dt.timedelta(minutes=i) for i in range(10)], pa.timestamp("us", "UTC")),
    "note": pa.array(["from pyarrow"] * 10),
})
with pa.ipc.new_stream(sys.stdout.buffer, batch.schema) as w:
    w.write_batch(batch)
EOF

# Old modification times: read-files waits for files younger than --stable-after.
find . -type f -exec touch -d '2024-01-01T00:00:00Z' {} +

# Delta tables.
# lake/orders: 14 versions, one per epoch of 10 rows (read-delta --version 12), partitioned by
# date and day, with the columns read-files adds (_rescued_data) and a record_source column
# (write-delta --with record_source=…, backfill's stream filter).
bg eval "orders 140 100 1000 --schema \"\$ORDERS, _rescued_data string\" --gen '_rescued_data=constant(x) nulls=1' \
    --max-records-per-epoch 10 \
  | sk write-delta lake/orders --partition-by date,day --with record_source=stream --flow orders-stream"
bg eval "orders 40 1 1 --schema \"\$ORDERS, _rescued_data string\" --gen '_rescued_data=constant(x) nulls=1' \
  | sk write-delta lake/orders_2023 --partition-by date,day --with record_source=archive"
# lake/events (a live flow) and archive/events (its history), overlapping by two hours.
EV='event_id bigint, id bigint, ts timestamp'
bg eval "sk generate --schema '$EV' --rows 60 --gen 'event_id=sequence(100)' --gen 'id=sequence(100)' \
    --gen 'ts=timestamp(2024-05-01T02:00:00Z, 1/min)' \
  | sk write-delta lake/events --with record_source=stream --flow events-stream"
bg eval "sk generate --schema '$EV' --rows 240 --gen event_id=sequence --gen id=sequence \
  --gen 'ts=timestamp(2024-05-01T00:00:00Z, 1/min)' | sk write-delta archive/events"
# lake/bronze: rows with duplicate ids (read-delta --follow | dedup | write-delta lake/silver).
bg eval "sk generate --schema 'id bigint, payload string' --rows 50 --duplicates 0.3 --gen id=sequence \
  | sk write-delta lake/bronze"

# Kafka: the orders topic as JSON values, read into the checkpoint ckpt/orders by a
# read-kafka | dedup | window | print pipeline in 12 epochs of 10 records (state-dump --diff
# 10,12 needs epochs 10 and 12, within the 5 retained ones).
kafka_ckpt() {
  orders 120 18 | sk write-kafka -b "$BROKER" -t "$ORDERS_TOPIC" --value-format json
  export STREAMKIT_CHECKPOINT=./ckpt/orders
  sk read-kafka -b "$BROKER" -t "$ORDERS_TOPIC" --until now --value-format json --value-schema orders.json \
      --max-records-per-epoch 10 \
    | sk dedup --key value.order_id \
    | sk window tumbling --size 1h --time timestamp --allowed-lateness 1h --key value.region \
        --agg 'count, sum(value.amount) as revenue' \
    | sk print > /dev/null
}
bg kafka_ckpt
# ckpt/dedup: a dedup stage of its own.
bg eval "STREAMKIT_CHECKPOINT=./ckpt sk read-files 'events/*.json' --name events-src \
  | STREAMKIT_CHECKPOINT=./ckpt sk dedup --key id \
  | STREAMKIT_CHECKPOINT=./ckpt sk print --name events-print > /dev/null"

# topics/<topic>.json: what the test produces into a topic an example reads (read-kafka -t
# <topic>), as JSON values (Avro for a --value-format avro reader).
bg eval "orders 30 19 | sk select 'order_id, customer_id, user_id, region, amount, qty' | json topics/orders.json && cp topics/orders.json topics/in.json"
bg eval "orders 10 20 | sk select 'order_id, amount' | json topics/refunds.json"
bg eval "sk generate --schema 'path string, user string, status int' --rows 20 --seed 21 \
  --gen 'path=choice(/api/orders, /api/users, /health)' --gen 'user=names nulls=0.3' | json topics/logs.json"
bg eval "sk generate --schema 'sensor_id string, sensor_type string' --rows 10 --seed 22 \
  --gen 'sensor_id=choice(s1, s2, s3)' --gen 'sensor_type=choice(temp, door)' | json topics/heartbeats.json"
await

# The repository's scripts (scripts/examples/source.py) and Python venv, for examples run from
# a checkout.
ln -s "$REPO/scripts" scripts
if [[ -e "$REPO/.venv" ]]; then ln -s "$REPO/.venv" .venv; fi

# s3/<bucket>/: uploaded into a fresh bucket for each s3://<bucket>/ an example names.
mkdir -p s3/bucket/lake s3/lake s3/landing
cp -r landing s3/bucket/landing
cp -r lake/orders s3/bucket/lake/orders
cp -r lake/orders s3/lake/orders
cp -r landing/orders s3/landing/orders
