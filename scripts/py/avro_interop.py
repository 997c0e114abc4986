"""Avro interop peer for read-kafka/write-kafka tests: confluent-kafka's AvroSerializer and
AvroDeserializer against a real schema registry and Kafka broker.

    avro_interop.py produce BROKER REGISTRY TOPIC SCHEMA.avsc RECORDS.json
        Serialises each record of RECORDS.json (a JSON array; bytes as {"$bytes": "<hex>"},
        decimals as {"$decimal": "12.34"}, dates as {"$date": "2024-05-01"}, timestamps as
        {"$ts_ms": <epoch ms>}) with AvroSerializer (registering SCHEMA under TOPIC-value) and
        produces it; a record {"$raw": "<hex>"} is produced as these raw bytes. Prints the
        schema ids used, one JSON line.
    avro_interop.py consume BROKER REGISTRY TOPIC N
        Consumes N records from the beginning and deserialises them with AvroDeserializer;
        prints one JSON line per record (bytes hex, decimals as strings, dates ISO).
"""
import datetime
import decimal
import faulthandler
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def revive(v):
    if isinstance(v, dict):
        if "$bytes" in v:
            return bytes.fromhex(v["$bytes"])
        if "$decimal" in v:
            return decimal.Decimal(v["$decimal"])
        if "$date" in v:
            return datetime.date.fromisoformat(v["$date"])
        if "$ts_ms" in v:
            return datetime.datetime.fromtimestamp(v["$ts_ms"] / 1000, tz=datetime.timezone.utc)
        return {k: revive(x) for k, x in v.items()}
    if isinstance(v, list):
        return [revive(x) for x in v]
    return v


def plain(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        return int(v.timestamp() * 1000)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def registry_client(url):
    # No timeout is confluent-kafka's default: one request the registry never answered (CI, a
    # loaded 2-core machine) hung a produce for the full 100 s. A bounded request is retried
    # (max.retries 3, on httpx timeouts too), so a slow answer still passes.
    return SchemaRegistryClient({"url": url, "timeout": 15})


def produce(broker, registry, topic, schema_path, records_path):
    sr = registry_client(registry)
    with open(schema_path) as f:
        ser = AvroSerializer(sr, f.read())
    with open(records_path) as f:
        records = json.load(f)
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    ids = set()
    for r in records:
        if isinstance(r, dict) and "$raw" in r:
            val = bytes.fromhex(r["$raw"])
        else:
            val = ser(revive(r), ctx)
            ids.add(int.from_bytes(val[1:5], "big"))
        p.produce(topic, value=val, partition=0)
    if p.flush(30) != 0:
        sys.exit("produce: records left unflushed")
    print(json.dumps({"ids": sorted(ids), "n": len(records)}))


def consume(broker, registry, topic, n):
    sr = registry_client(registry)
    de = AvroDeserializer(sr)
    c = Consumer({"bootstrap.servers": broker, "group.id": "avro-interop-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    try:
        while got < n:
            m = c.poll(30)
            if m is None:
                sys.exit(f"consume: only {got} of {n} records")
            if m.error():
                sys.exit(f"consume: {m.error()}")
            v = de(m.value(), SerializationContext(topic, MessageField.VALUE))
            print(json.dumps({"offset": m.offset(), "id": int.from_bytes(m.value()[1:5], "big"), "value": plain(v)}, sort_keys=True))
            got += 1
    finally:
        c.close()


if __name__ == "__main__":
    faulthandler.dump_traceback_later(100, exit=True)  # never hang a test run
    if sys.argv[1] == "produce":
        produce(*sys.argv[2:7])
    elif sys.argv[1] == "consume":
        consume(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(__doc__)
