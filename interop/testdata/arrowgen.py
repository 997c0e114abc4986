"""Deterministic pyarrow streams for streamkit's interop tests (interop/*_test.go).

    arrowgen.py produce CASE            write CASE as an Arrow IPC stream to stdout
    arrowgen.py check CASE [--key K]    read a stream from stdin; compare it with what a
                                        pass-through stage (keyby K) must output for CASE;
                                        print every difference on stderr and exit 1
    arrowgen.py boundaries CASE         print the byte offset after each IPC message of
                                        CASE's stream (the last one is after the
                                        end-of-stream marker), one per line

A case is a list of items: ("data", RecordBatch, custom_metadata or None) or
("control", {key: value}). `produce` writes them in order; a case that ends without an end
control is a foreign producer (end-of-stream alone means end=final).
"""

import datetime as dt
import decimal
import math
import os
import struct
import sys

import pyarrow as pa

# ---------------------------------------------------------------------------------------------
# The all-types schema: every common Arrow type, nulls at every nesting level, field and
# schema metadata.

ALL_TYPES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False, metadata={"doc": "row id", "unit": "none"}),
        pa.field("i8", pa.int8()),
        pa.field("i16", pa.int16()),
        pa.field("i32", pa.int32()),
        pa.field("i64", pa.int64()),
        pa.field("u8", pa.uint8()),
        pa.field("u16", pa.uint16()),
        pa.field("u32", pa.uint32()),
        pa.field("u64", pa.uint64()),
        pa.field("f16", pa.float16()),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64(), metadata={"unit": "EUR"}),
        pa.field("bool", pa.bool_()),
        pa.field("dec", pa.decimal128(38, 10)),
        pa.field("dec_small", pa.decimal128(5, 2)),
        pa.field("str", pa.string()),
        pa.field("lstr", pa.large_string()),
        pa.field("bin", pa.binary()),
        pa.field("lbin", pa.large_binary()),
        pa.field("fbin", pa.binary(3)),
        pa.field("ts_s_utc", pa.timestamp("s", tz="UTC")),
        pa.field("ts_ms_berlin", pa.timestamp("ms", tz="Europe/Berlin")),
        pa.field("ts_us_offset", pa.timestamp("us", tz="+05:30")),
        pa.field("ts_ns_utc", pa.timestamp("ns", tz="UTC")),
        pa.field("ts_us_naive", pa.timestamp("us")),
        pa.field("ts_ns_naive", pa.timestamp("ns")),
        pa.field("date", pa.date32()),
        pa.field("date64", pa.date64()),
        pa.field("time_ms", pa.time32("ms")),
        pa.field("time_us", pa.time64("us")),
        pa.field("dur_us", pa.duration("us")),
        pa.field("list_i32", pa.list_(pa.int32())),
        pa.field("llist_str", pa.large_list(pa.string())),
        pa.field("fsl_f64", pa.list_(pa.float64(), 2)),
        pa.field(
            "st",
            pa.struct(
                [
                    pa.field("a", pa.int32()),
                    pa.field("b", pa.string(), metadata={"nested": "yes"}),
                    pa.field("inner", pa.struct([pa.field("x", pa.float64()), pa.field("tags", pa.list_(pa.string()))])),
                ]
            ),
        ),
        pa.field("list_st", pa.list_(pa.struct([pa.field("k", pa.string()), pa.field("v", pa.int64())]))),
        pa.field("map_si", pa.map_(pa.string(), pa.int64())),
        pa.field("map_s_list", pa.map_(pa.string(), pa.list_(pa.int32()))),
        pa.field("dict_str", pa.dictionary(pa.int32(), pa.string())),
        pa.field("dict8_str", pa.dictionary(pa.int8(), pa.string())),
    ],
    metadata={"origin": "arrowgen.py", "owner": "interop-test", "streamkit.event_time": "ts_us_naive"},
)

UTC = dt.timezone.utc
BERLIN_WINTER = dt.timezone(dt.timedelta(hours=1))


def all_types_batch(part):
    """Batch `part` (0, 1, 2) of the all-types case. Row values depend only on part."""
    base = part * 4
    ids = [base + i for i in range(4)]
    cols = {
        "id": ids,
        "i8": [-128, 127, None, 0],
        "i16": [-32768, 32767, None, -1],
        "i32": [-(2**31), 2**31 - 1, None, part],
        "i64": [-(2**63), 2**63 - 1, None, 2**53 + 1],
        "u8": [0, 255, None, 7],
        "u16": [0, 65535, None, 7],
        "u32": [0, 2**32 - 1, None, 7],
        "u64": [0, 2**64 - 1, None, 2**63],
        "f16": None,  # built below from raw half-float bits (pyarrow needs numpy otherwise)
        "f32": [1.5, float("inf"), None, -0.0],
        "f64": [math.pi, float("-inf"), None, float("nan") if part == 1 else 1e-300],
        "bool": [True, False, None, part % 2 == 0],
        "dec": [
            decimal.Decimal("1234567890123456789012345678.0123456789"),
            decimal.Decimal("-0.0000000001"),
            None,
            decimal.Decimal(part),
        ],
        "dec_small": [decimal.Decimal("999.99"), decimal.Decimal("-999.99"), None, decimal.Decimal("0.01")],
        "str": ["", "héllo, \"wörld\"\nline2", None, "p%d" % part],
        "lstr": ["large", "ünïcødé ✓", None, ""],
        "bin": [b"", b"\x00\x01\xff", None, b"bytes"],
        "lbin": [b"\xde\xad\xbe\xef", b"", None, b"x"],
        "fbin": [b"abc", b"\x00\x00\x00", None, b"xyz"],
        "ts_s_utc": [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(2024, 3, 10, 12, 0, 1, tzinfo=UTC), None,
                     dt.datetime(1900, 1, 1, tzinfo=UTC)],
        "ts_ms_berlin": [dt.datetime(2024, 1, 15, 8, 30, 0, 123000, tzinfo=BERLIN_WINTER),
                         dt.datetime(2024, 3, 31, 1, 59, 59, 999000, tzinfo=BERLIN_WINTER), None,
                         dt.datetime(2024, 10, 27, 0, 30, tzinfo=UTC)],
        "ts_us_offset": [dt.datetime(2024, 3, 10, 12, 0, 0, 123456, tzinfo=UTC), None,
                         dt.datetime(2000, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
                         dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC)],
        "ts_ns_utc": pa.array([1_700_000_000_123_456_789, -1, None, 0], pa.int64()),
        "ts_us_naive": [dt.datetime(2024, 3, 10, 12, 0, part), dt.datetime(2024, 3, 10, 12, 0, 0, 500000), None,
                        dt.datetime(1999, 12, 31, 23, 59, 59)],
        "ts_ns_naive": pa.array([1_710_072_000_000_000_001, 0, None, -1_000_000_000], pa.int64()),
        "date": [dt.date(1970, 1, 1), dt.date(2024, 2, 29), None, dt.date(1, 1, 1)],
        "date64": [dt.date(2024, 12, 31), dt.date(1969, 12, 31), None, dt.date(2000, 1, 1)],
        "time_ms": [dt.time(0, 0), dt.time(23, 59, 59, 999000), None, dt.time(12, 30)],
        "time_us": [dt.time(0, 0, 0, 1), dt.time(23, 59, 59, 999999), None, dt.time(6, 0)],
        "dur_us": [dt.timedelta(0), dt.timedelta(days=-1, microseconds=1), None, dt.timedelta(hours=25, microseconds=7)],
        # lists: values, empty list, null list, null elements
        "list_i32": [[1, 2, 3], [], None, [None, -1, None]],
        "llist_str": [["a", None, ""], None, [], ["z" * 10]],
        "fsl_f64": [[1.0, 2.0], None, [None, 3.5], [0.0, -0.0]],
        # structs: full, null child, null struct, nested struct with null inner
        "st": [
            {"a": 1, "b": "one", "inner": {"x": 0.5, "tags": ["t1", None]}},
            {"a": None, "b": None, "inner": None},
            None,
            {"a": part, "b": "", "inner": {"x": None, "tags": []}},
        ],
        "list_st": [[{"k": "a", "v": 1}, None, {"k": None, "v": None}], [], None, [{"k": "z", "v": 2**40}]],
        # maps: entries with null values, empty map, null map
        "map_si": [[("a", 1), ("b", None)], [], None, [("only", -5)]],
        "map_s_list": [[("x", [1, None]), ("y", None)], None, [], [("e", [])]],
        "dict_str": None,
        "dict8_str": None,
    }
    arrays = []
    for f in ALL_TYPES_SCHEMA:
        name = f.name
        if name == "f16":
            # 1.5, -2.25, null, 65504.0 (the largest half float); validity bits 0b1011
            bits = struct.pack("<4H", 0x3E00, 0xC080, 0x0000, 0x7BFF)
            arrays.append(pa.Array.from_buffers(pa.float16(), 4, [pa.py_buffer(b"\x0b"), pa.py_buffer(bits)]))
        elif name in ("ts_ns_utc", "ts_ns_naive"):
            arrays.append(cols[name].cast(f.type))
        elif name == "dict_str":
            # A different dictionary per batch: the writer sends a replacement (or a delta).
            dictionary = pa.array(["red", "green", "blue"] if part != 1 else ["blue", "cyan", None, "red"])
            arrays.append(pa.DictionaryArray.from_arrays(pa.array([0, 2, None, part % 3], pa.int32()), dictionary))
        elif name == "dict8_str":
            dictionary = pa.array(["same", "dictionary"])
            arrays.append(pa.DictionaryArray.from_arrays(pa.array([1, None, 0, 1], pa.int8()), dictionary))
        else:
            arrays.append(pa.array(cols[name], f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=ALL_TYPES_SCHEMA)


def barrier(n):
    return ("control", {"streamkit.control": "barrier", "streamkit.epoch": str(n)})


def watermark(s):
    return ("control", {"streamkit.control": "watermark", "streamkit.watermark": s})


def end(kind):
    return ("control", {"streamkit.control": "end", "streamkit.end": kind})


def case_alltypes():
    return ALL_TYPES_SCHEMA, [
        ("data", all_types_batch(0), None),
        watermark("2024-03-10T12:00:00.123456Z"),
        barrier(1),
        ("data", all_types_batch(1), {"foreign.note": "data batch metadata", "seq": "2"}),
        # A watermark in another zone and with nanoseconds: streamkit normalizes it to UTC µs.
        watermark("2024-03-10T13:00:01.000000999+01:00"),
        # A watermark that does not advance is dropped (watermarks never move backwards).
        watermark("2024-03-10T11:00:00.000000Z"),
        # Keys other than streamkit's in a control batch are not forwarded.
        ("control", {"streamkit.control": "barrier", "streamkit.epoch": "2", "producer.note": "dropped"}),
        ("data", all_types_batch(2), None),
        barrier(3),
        end("pause"),
    ]


def simple_schema():
    return pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("name", pa.string()),
            pa.field("score", pa.float64()),
            pa.field("ts", pa.timestamp("ms", tz="UTC")),
            pa.field("tags", pa.list_(pa.string())),
        ],
        metadata={"producer": "foreign"},
    )


def simple_batch(part):
    return pa.record_batch(
        [
            pa.array([part * 2, part * 2 + 1]),
            pa.array(["row %d" % (part * 2), None]),
            pa.array([0.25 * part, None]),
            pa.array([dt.datetime(2024, 5, 1, 10, part, tzinfo=UTC), None], pa.timestamp("ms", tz="UTC")),
            pa.array([["x", "y"], None], pa.list_(pa.string())),
        ],
        schema=simple_schema(),
    )


def case_foreign():
    """A foreign producer: no control batch at all, IPC end-of-stream only (= end final)."""
    return simple_schema(), [("data", simple_batch(0), None), ("data", simple_batch(1), None)]


def case_controls():
    """A small stream with every control kind, for print --show-control."""
    return simple_schema(), [
        ("data", simple_batch(0), None),
        watermark("2024-05-01T10:00:00.000000Z"),
        barrier(1),
        ("data", simple_batch(1), None),
        barrier(2),
        end("final"),
    ]


def case_empty():
    """Schema only, then end-of-stream."""
    return simple_schema(), []


def case_end_no_kind():
    """An end batch without streamkit.end means end=final."""
    return simple_schema(), [("data", simple_batch(0), None), barrier(1), ("control", {"streamkit.control": "end"})]


def bad_control(md):
    return lambda: (simple_schema(), [("data", simple_batch(0), None), ("control", md), barrier(1), end("final")])


CASES = {
    "alltypes": case_alltypes,
    "foreign": case_foreign,
    "controls": case_controls,
    "empty": case_empty,
    "end-no-kind": case_end_no_kind,
    # Invalid control batches: a streamkit stage must fail on each.
    "bad-epoch-zero": bad_control({"streamkit.control": "barrier", "streamkit.epoch": "0"}),
    "bad-epoch-missing": bad_control({"streamkit.control": "barrier"}),
    "bad-epoch-negative": bad_control({"streamkit.control": "barrier", "streamkit.epoch": "-1"}),
    "bad-watermark": bad_control({"streamkit.control": "watermark", "streamkit.watermark": "yesterday"}),
    "bad-end": bad_control({"streamkit.control": "end", "streamkit.end": "later"}),
    "bad-kind": bad_control({"streamkit.control": "flush"}),
}

KNOWN_CONTROL_KEYS = ("streamkit.control", "streamkit.epoch", "streamkit.watermark", "streamkit.end")


def empty_batch(schema):
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def produce(name):
    schema, items = CASES[name]()
    try:
        out = pa.output_stream(sys.stdout.buffer)
        _write(out, schema, items)
        out.flush()
    except BrokenPipeError:
        # The reader went away (it failed or stopped early): end quietly, as a Unix producer.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _write(out, schema, items):
    with pa.ipc.new_stream(out, schema) as w:
        for it in items:
            if it[0] == "data":
                _, batch, md = it
                if md:
                    w.write_batch(batch, custom_metadata=md)
                else:
                    w.write_batch(batch)
            else:
                w.write_batch(empty_batch(schema), custom_metadata=it[1])


# ---------------------------------------------------------------------------------------------
# check


def canonical(batch):
    """Float columns compared bit for bit (NaN == NaN, -0.0 != 0.0)."""
    cols = []
    fields = []
    for f, col in zip(batch.schema, batch.columns):
        t = f.type
        if pa.types.is_float16(t):
            col, t = col.view(pa.uint16()), pa.uint16()
        elif pa.types.is_float32(t):
            col, t = col.view(pa.int32()), pa.int32()
        elif pa.types.is_float64(t):
            col, t = col.view(pa.int64()), pa.int64()
        cols.append(col)
        fields.append(pa.field(f.name, t, f.nullable, f.metadata))
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields, metadata=batch.schema.metadata))


def expected_items(name):
    """What a pass-through stage forwards: data as is, watermarks normalized to UTC µs and
    only when they advance, barriers as is, and an end (final when the producer sent none)."""
    schema, items = CASES[name]()
    out = []
    last_wm = None
    for it in items:
        if it[0] == "control" and it[1]["streamkit.control"] == "watermark":
            t = dt.datetime.fromisoformat(it[1]["streamkit.watermark"].replace("Z", "+00:00"))
            t = t.astimezone(UTC)  # fromisoformat keeps µs (truncates ns)
            if last_wm is not None and t <= last_wm:
                continue
            last_wm = t
            out.append(watermark(t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")))
        elif it[0] == "control":
            md = {k: v for k, v in it[1].items() if k in KNOWN_CONTROL_KEYS}
            if md["streamkit.control"] == "end" and not md.get("streamkit.end"):
                md["streamkit.end"] = "final"
            out.append(("control", md))
        else:
            out.append(it)
    if not out or out[-1][0] != "control" or out[-1][1]["streamkit.control"] != "end":
        out.append(end("final"))
    return schema, out


def md_dict(md):
    if md is None:
        return None
    d = {k.decode(): v.decode() for k, v in md.items()}
    return d or None


def check(name, key):
    schema, want = expected_items(name)
    errors = []
    reader = pa.ipc.open_stream(pa.input_stream(sys.stdin.buffer))
    got_schema = reader.schema

    want_md = dict(schema.metadata or {})
    want_md = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
               for k, v in want_md.items()}
    if key:
        want_md["streamkit.key"] = key
    got_md = md_dict(got_schema.metadata) or {}
    if got_md != want_md:
        errors.append("schema metadata: got %r, want %r" % (got_md, want_md))
    want_schema = schema.with_metadata(want_md)
    if not got_schema.equals(want_schema, check_metadata=True):
        errors.append("schema:\n--- got\n%s\n--- want\n%s" % (
            got_schema.to_string(show_field_metadata=True), want_schema.to_string(show_field_metadata=True)))
        for gf, wf in zip(got_schema, want_schema):
            if not gf.equals(wf, check_metadata=True):
                errors.append("  field %s: got %s %r, want %s %r" % (wf.name, gf, gf.metadata, wf, wf.metadata))

    got = []
    while True:
        try:
            batch, md = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        got.append((batch, md_dict(md)))

    for i in range(max(len(got), len(want))):
        if i >= len(got):
            errors.append("item %d: missing, want %s" % (i, describe(want[i])))
            continue
        if i >= len(want):
            errors.append("item %d: unexpected %s" % (i, describe_got(got[i])))
            continue
        gb, gmd = got[i]
        w = want[i]
        if w[0] == "control":
            if gb.num_rows != 0 or gmd != w[1]:
                errors.append("item %d: got %s, want control %r" % (i, describe_got(got[i]), w[1]))
            continue
        _, wb, wmd = w
        if gmd != (wmd or None):
            errors.append("item %d: data batch custom metadata: got %r, want %r" % (i, gmd, wmd))
        if gb.num_rows != wb.num_rows:
            errors.append("item %d: got %d rows, want %d" % (i, gb.num_rows, wb.num_rows))
            continue
        g, wc = canonical(gb), canonical(wb)
        for j, f in enumerate(wc.schema):
            gc, wcol = g.column(j), wc.column(j)
            if not gc.equals(wcol):
                errors.append("item %d column %s:\n  got  %s\n  want %s" % (
                    i, f.name, gc.to_pylist(), wcol.to_pylist()))

    if errors:
        for e in errors:
            print("arrowgen check %s: %s" % (name, e), file=sys.stderr)
        sys.exit(1)
    print("ok %d items" % len(got))


def boundaries(name):
    sink = pa.BufferOutputStream()
    schema, items = CASES[name]()
    _write(sink, schema, items)
    buf = sink.getvalue()
    f = pa.BufferReader(buf)
    r = pa.ipc.MessageReader.open_stream(f)
    while True:
        try:
            r.read_next_message()
        except StopIteration:
            break
        print(f.tell())
    print(buf.size)


def describe(item):
    if item[0] == "control":
        return "control %r" % item[1]
    return "data batch of %d rows" % item[1].num_rows


def describe_got(g):
    b, md = g
    return "batch of %d rows with metadata %r" % (b.num_rows, md)


def main(argv):
    if len(argv) >= 2 and argv[0] == "produce":
        produce(argv[1])
    elif len(argv) >= 2 and argv[0] == "boundaries":
        boundaries(argv[1])
    elif len(argv) >= 2 and argv[0] == "check":
        key = None
        if len(argv) == 4 and argv[2] == "--key":
            key = argv[3]
        check(argv[1], key)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
