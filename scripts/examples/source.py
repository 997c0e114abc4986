#!/usr/bin/env python3
"""A streamkit-compatible source written with pyarrow: an example of docs/protocol.md.

It writes an Arrow IPC stream to stdout: data batches, a barrier at the end of every epoch
(epochs 1..N), optionally a watermark before each barrier, and an end batch (end=pause by
default, as a checkpointing source does at the end of its input).

    .venv/bin/python scripts/examples/source.py --epochs 3 --rows 4 | streamkit print --show-control
    .venv/bin/python scripts/examples/source.py --epochs 100 --delay 0.2 --checkpoint ckpt/src \\
        | streamkit print --checkpoint ckpt/print

It needs pyarrow: run it with the project venv's Python (.venv/bin/python, made by
scripts/peers.sh python), not the system's python3.

Columns: id (int64, row number from 0), epoch (int64), ts (timestamp[us, UTC], event time:
2024-01-01T00:00:00Z + id seconds), value (float64, id / 2), name (string, "user-<id % 7>").
The rows are a pure function of id, so a replay reproduces them exactly.

Ctrl-C (SIGINT) or SIGTERM: stop producing rows, finish the current epoch (its barrier, if
it has rows), send end=pause with reason=interrupt, exit 130; a second signal aborts at once (exit 130, no end batch,
no end-of-stream marker). A reader that goes away (BrokenPipe, `| head`) ends the source
quietly (exit 0; 130 if it was interrupted).

With --checkpoint DIR the source keeps a streamkit checkpoint directory (docs/protocol.md §3):
it locks DIR/LOCK, writes metadata.json, writes the end position of each epoch to
offsets/<epoch>.json before that epoch's barrier, announces DIR in the schema metadata
(streamkit.checkpoints) so the sink writes commit markers into DIR/commits/, and on restart
resumes after the newest committed epoch, replaying uncommitted epochs exactly. --epochs is
then the total length of the input: a finished input emits only end=pause.

Needs only pyarrow.
"""

import argparse
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import select
import signal
import sys
import tempfile

import pyarrow as pa

BASE_TIME = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("epoch", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("name", pa.string()),
    ]
)


def parse_args(argv):
    p = argparse.ArgumentParser(description="Example streamkit source (pyarrow).")
    p.add_argument("--epochs", type=int, default=3, help="number of epochs of the input (default 3)")
    p.add_argument("--rows", type=int, default=10, help="rows per epoch (default 10)")
    p.add_argument("--batch-rows", type=int, default=5, help="maximum rows per data batch (default 5)")
    p.add_argument("--delay", type=float, default=0.0, help="seconds to wait after each data batch (default 0)")
    p.add_argument("--end", choices=["pause", "final"], default="pause", help="end batch at the end of input (default pause)")
    p.add_argument("--watermarks", action="store_true", help="send a watermark (max event time) before each barrier")
    p.add_argument("--checkpoint", metavar="DIR", help="keep a streamkit checkpoint directory (offsets WAL, commits)")
    a = p.parse_args(argv)
    if a.epochs < 0 or a.rows < 1 or a.batch_rows < 1 or a.delay < 0:
        p.error("--epochs must be >= 0, --rows and --batch-rows >= 1, --delay >= 0")
    return a


# --- checkpoint files (docs/protocol.md §3) ---------------------------------------------------


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data):
    """CRC32C (Castagnoli), as state.CRC32C."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def encode_envelope(value):
    data = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    return b'{"crc32c":"%08x","data":%s}\n' % (crc32c(data), data)


def decode_envelope(path):
    """Verify and decode a checkpoint envelope: the CRC32C covers the exact bytes of the
    "data" value as they appear in the file."""
    with open(path, "rb") as f:
        raw = f.read().decode()
    try:
        env = json.loads(raw)
        stored = env["crc32c"]
        i = raw.index(":", raw.index('"data"') + len('"data"')) + 1
        while raw[i] in " \t\r\n":
            i += 1
        _, end = json.JSONDecoder().raw_decode(raw, i)
        data_bytes = raw[i:end].encode()
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise SystemExit("source.py: corrupt checkpoint file %s: %s" % (path, e))
    if "%08x" % crc32c(data_bytes) != stored:
        raise SystemExit("source.py: corrupt checkpoint file %s: checksum mismatch" % path)
    return env["data"]


def write_atomic(directory, name, content):
    """temp file in the same directory, write, fsync, rename, fsync the directory."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + name + "-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def epoch_name(n):
    return "%020d.json" % n


def epochs_in(directory):
    out = []
    for name in os.listdir(directory):
        stem, ext = os.path.splitext(name)
        if ext == ".json" and len(stem) == 20 and stem.isdigit():
            out.append(int(stem))
    return sorted(out)


class Checkpoint:
    """The source's checkpoint directory: lock, metadata, offsets WAL, commit markers."""

    def __init__(self, path, options):
        self.path = os.path.abspath(path)
        for sub in ("offsets", "state", "commits"):
            os.makedirs(os.path.join(self.path, sub), exist_ok=True)
        self.lock = open(os.path.join(self.path, "LOCK"), "a+")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise SystemExit("source.py: checkpoint %s is locked by another process" % self.path)
            raise
        self.lock.truncate(0)
        self.lock.write("%d\n" % os.getpid())
        self.lock.flush()
        for sub in ("", "offsets", "state", "commits"):  # leftovers of a crashed writer
            d = os.path.join(self.path, sub)
            for name in os.listdir(d):
                if name.startswith(".tmp-"):
                    os.unlink(os.path.join(d, name))
        meta_path = os.path.join(self.path, "metadata.json")
        fingerprint = hashlib.sha256("".join("%s=%s\n" % kv for kv in sorted(options.items())).encode()).hexdigest()
        if os.path.exists(meta_path):
            meta = decode_envelope(meta_path)
            if meta.get("options") != options:
                raise SystemExit(
                    "source.py: checkpoint %s was written with other options: %r, this run has %r"
                    % (self.path, meta.get("options"), options)
                )
        else:
            now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
            meta = {"tool": "source.py", "name": "source.py", "options": options, "fingerprint": fingerprint, "created": now}
            write_atomic(self.path, "metadata.json", encode_envelope(meta))

    def committed(self):
        """Newest epoch with a commit marker (verified), 0 when none."""
        eps = epochs_in(os.path.join(self.path, "commits"))
        if not eps:
            return 0
        decode_envelope(os.path.join(self.path, "commits", epoch_name(eps[-1])))
        return eps[-1]

    def offsets(self):
        return epochs_in(os.path.join(self.path, "offsets"))

    def read_offsets(self, n):
        return decode_envelope(os.path.join(self.path, "offsets", epoch_name(n)))

    def write_offsets(self, n, position):
        write_atomic(os.path.join(self.path, "offsets"), epoch_name(n), encode_envelope(position))


# --- the stream -------------------------------------------------------------------------------


class Interrupt:
    """SIGINT/SIGTERM set a flag and wake up the delay wait (a self-pipe)."""

    def __init__(self):
        self.requested = False
        self.r, w = os.pipe()
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w)
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum, frame):
        if self.requested:
            os._exit(130)  # a second signal aborts: no end batch, no end-of-stream marker
        self.requested = True

    def wait(self, seconds):
        if seconds > 0 and not self.requested:
            select.select([self.r], [], [], seconds)


def rows(start, stop, epoch):
    ids = list(range(start, stop))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ids, pa.int64()),
            pa.array([epoch] * len(ids), pa.int64()),
            pa.array([BASE_TIME + dt.timedelta(seconds=i) for i in ids], pa.timestamp("us", tz="UTC")),
            pa.array([i / 2 for i in ids], pa.float64()),
            pa.array(["user-%d" % (i % 7) for i in ids], pa.string()),
        ],
        schema=SCHEMA,
    )


EMPTY = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in SCHEMA], schema=SCHEMA)


class Output:
    def __init__(self, schema):
        self.out = sys.stdout.buffer
        self.w = pa.ipc.new_stream(self.out, schema)

    def data(self, batch):
        self.w.write_batch(batch)
        self.out.flush()

    def control(self, **md):
        # A control batch: zero rows, custom metadata with streamkit.* keys.
        self.w.write_batch(EMPTY, custom_metadata={"streamkit." + k: v for k, v in md.items()})
        self.out.flush()

    def close(self):
        self.w.close()  # writes the end-of-stream marker
        self.out.flush()


def run(args, intr):
    ckpt = None
    committed, start, replay = 0, 0, {}
    schema = SCHEMA
    if args.checkpoint:
        ckpt = Checkpoint(args.checkpoint, {"rows": str(args.rows)})
        committed = ckpt.committed()
        if committed > 0:
            start = ckpt.read_offsets(committed)["next_id"]
        replay = {n: ckpt.read_offsets(n)["next_id"] for n in ckpt.offsets() if n > committed}
        # It replays its uncommitted epochs exactly (offsets WAL): its epochs are replayable.
        schema = SCHEMA.with_metadata({"streamkit.checkpoints": ckpt.path, "streamkit.replayable": "true"})
    out = Output(schema)
    pos, n = start, committed + 1
    while n <= args.epochs or n in replay:
        limit = replay.get(n, pos + args.rows)  # a replayed epoch ends where it ended before
        epoch_rows = 0
        while pos < limit and (n in replay or not intr.requested):
            stop = min(pos + args.batch_rows, limit)
            out.data(rows(pos, stop, n))
            epoch_rows += stop - pos
            pos = stop
            intr.wait(args.delay)
        if epoch_rows == 0 and n not in replay:
            break  # interrupted before the epoch had a row: no barrier
        if ckpt and n not in replay:
            ckpt.write_offsets(n, {"next_id": pos})  # the WAL entry precedes the barrier
        if args.watermarks:
            last = BASE_TIME + dt.timedelta(seconds=pos - 1)
            out.control(control="watermark", watermark=last.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        out.control(control="barrier", epoch=str(n))
        print("source.py: epoch %d done (%d rows)" % (n, epoch_rows), file=sys.stderr, flush=True)
        n += 1
        if intr.requested:
            break
    if intr.requested:
        # reason=interrupt: every stage downstream exits 130 too (docs/protocol.md §11).
        out.control(control="end", end="pause", reason="interrupt")
    else:
        out.control(control="end", end=args.end)
    out.close()


def main(argv):
    args = parse_args(argv)
    intr = Interrupt()
    try:
        run(args, intr)
    except BrokenPipeError:
        # The reader went away: stop quietly; keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 130 if intr.requested else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
