package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// forward copies a stream with NextRaw and WriteRaw into a stream of schema out (the input's
// schema with other metadata), writing controls with WriteControl, and returns its bytes.
func forward(t *testing.T, in []byte, out *arrow.Schema, mem memory.Allocator) ([]byte, error) {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(in), mem)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	if !rd.Forwardable() {
		t.Fatal("stream not forwardable")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, out, mem)
	for {
		m, err := rd.NextRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if m.Control != nil {
			err = w.WriteControl(*m.Control)
		} else {
			err = w.WriteRaw(m.Data)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// describe reads a whole stream with Next: its schema metadata, then one line per message,
// data batches as data renders them (and releases them).
func describe(t *testing.T, r io.Reader, mem memory.Allocator, data func(arrow.RecordBatch) string) []string {
	t.Helper()
	rd, err := NewReader(r, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	out := []string{rd.Schema().Metadata().String()}
	for {
		m, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Control != nil {
			out = append(out, m.Control.String())
			continue
		}
		out = append(out, data(m.Batch))
		m.Batch.Release()
	}
}

// columns renders a batch's columns.
func columns(rec arrow.RecordBatch) string {
	var sb strings.Builder
	for i, c := range rec.Columns() {
		fmt.Fprintf(&sb, "%s=%v ", rec.ColumnName(i), c)
	}
	return sb.String()
}

// run runs steps until one fails.
func run(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// Data batches forwarded raw (first data, before any control, and between controls) read back
// equal, under the output stream's schema metadata; controls pass through NextRaw parsed.
func TestForwardRaw(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var in bytes.Buffer
	w := NewWriter(&in, s, mem)
	rec := testBatch(mem, s, 7)
	defer rec.Release()
	sliced := rec.NewSlice(2, 6)
	defer sliced.Release()
	barrier := NewControlBatch(mem, s, BarrierControl(2))
	defer barrier.Release()
	if err := run(
		func() error { return w.Write(rec) },
		func() error { return w.WriteControl(BarrierControl(1)) },
		func() error { return w.Write(sliced) },
		func() error { return w.Write(barrier) },
		func() error { return w.WriteControl(EndControl(Pause)) },
		w.Close,
	); err != nil {
		t.Fatal(err)
	}
	md := arrow.NewMetadata([]string{SchemaKey}, []string{"s"})
	out := arrow.NewSchema(s.Fields(), &md)
	fwd, err := forward(t, in.Bytes(), out, mem)
	if err != nil {
		t.Fatal(err)
	}
	want := describe(t, bytes.NewReader(in.Bytes()), mem, columns)
	got := describe(t, bytes.NewReader(fwd), mem, columns)
	want[0] = md.String()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("forwarded stream:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) != 6 {
		t.Fatalf("got %d messages, want schema + 5: %q", len(got), got)
	}
}

// A stream cut inside a data message, or whose batch claims a buffer beyond its body, is an
// error of NextRaw (truncation as ErrTruncated); a stream without end-of-stream marker too.
func TestNextRawBadInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var in bytes.Buffer
	w := NewWriter(&in, s, mem)
	rec := testBatch(mem, s, 100)
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	schemaLen := schemaMessageLen(t, in.Bytes())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := in.Bytes()
	read := func(b []byte) error {
		rd, err := NewReader(bytes.NewReader(b), mem)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Release()
		for {
			_, err := rd.NextRaw()
			if err != nil {
				return err
			}
		}
	}
	if err := read(full); err != io.EOF {
		t.Fatalf("whole stream: %v", err)
	}
	if err := read(full[:len(full)-8]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("no end-of-stream marker: %v, want ErrTruncated", err)
	}
	if err := read(full[:len(full)-40]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut inside the body: %v, want ErrTruncated", err)
	}
	// Make the first buffer's length of the batch exceed the body: find the Buffer vector by
	// its known first entry (offset 0, length of the validity or offsets buffer).
	bad := append([]byte(nil), full...)
	batch := bad[schemaLen:]
	metaLen := int(binary.LittleEndian.Uint32(batch[4:]))
	meta := batch[8 : 8+metaLen]
	patched := false
	for i := 0; i+16 <= len(meta); i += 8 {
		if binary.LittleEndian.Uint64(meta[i:]) == 0 && binary.LittleEndian.Uint64(meta[i+8:]) == 800 { // id column: 100 × 8 bytes
			binary.LittleEndian.PutUint64(meta[i+8:], 1<<40)
			patched = true
			break
		}
	}
	if !patched {
		t.Skip("could not locate the buffer entry to corrupt")
	}
	if err := read(bad); err == nil || !strings.Contains(err.Error(), "outside the message body") {
		t.Fatalf("buffer beyond the body: %v", err)
	}
}

// schemaMessageLen is the length of the first (schema) message of an IPC stream.
func schemaMessageLen(t *testing.T, b []byte) int {
	t.Helper()
	if binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		t.Fatal("no continuation marker")
	}
	return 8 + int(binary.LittleEndian.Uint32(b[4:]))
}

// A stream with a dictionary-encoded column is not forwardable, and WriteRaw refuses to start
// one.
func TestForwardableDictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	s := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(dt)}}, nil)
	var in bytes.Buffer
	w := NewWriter(&in, s, mem)
	if err := w.WriteRaw([]byte{}); err == nil {
		t.Fatal("WriteRaw into a stream with dictionaries: no error")
	}
	lb := array.NewBuilder(mem, s.Field(0).Type).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.BinaryDictionaryBuilder).AppendString("x")
	a := lb.NewArray()
	lb.Release()
	rec := array.NewRecordBatch(s, []arrow.Array{a}, 1)
	a.Release()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bytes.NewReader(in.Bytes()), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if rd.Forwardable() {
		t.Fatal("stream with a dictionary inside a list is forwardable")
	}
}

// Batches with large columns go to a pipe in vectored writes that fill the pipe many times
// over (partial writes, waits for the reader) and read back equal, between small controls.
func TestWriterPipeLargeBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	big := testBatch(mem, s, 300000) // 2.4 MB of ids, 0.8 MB of offsets
	defer big.Release()
	small := testBatch(mem, s, 3)
	defer small.Release()
	werr := make(chan error, 1)
	go func() {
		defer pw.Close()
		w := NewWriter(pw, s, mem)
		werr <- run(
			func() error { return w.Write(big) },
			func() error { return w.WriteControl(BarrierControl(1)) },
			func() error { return w.Write(small) },
			func() error { return w.Write(big) },
			func() error { return w.WriteControl(EndControl(Final)) },
			w.Close,
		)
	}()
	got := describe(t, pr, mem, func(rec arrow.RecordBatch) string {
		want := small
		if rec.NumRows() == big.NumRows() {
			want = big
		}
		if !array.RecordEqual(rec, want) {
			t.Errorf("batch of %d rows differs from the one written", rec.NumRows())
		}
		return fmt.Sprint("data ", rec.NumRows())
	})[1:]
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if want := "data 300000,barrier epoch=1,data 3,data 300000,end final"; strings.Join(got, ",") != want {
		t.Fatalf("got %s, want %s", strings.Join(got, ","), want)
	}
}

// A large body (read past the buffer, straight from the source) cut short is a truncation
// for Next and NextRaw alike, and a whole one reads back equal.
func TestLargeBodyReadPastBuffer(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var in bytes.Buffer
	w := NewWriter(&in, s, mem)
	big := testBatch(mem, s, 200000)
	defer big.Release()
	for i := 0; i < 3; i++ {
		if err := w.Write(big); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := in.Bytes()
	for _, raw := range []bool{false, true} {
		for _, cut := range []int{len(full), len(full) - 100000, len(full)/2 + 5} {
			rd, err := NewReader(bytes.NewReader(full[:cut]), mem)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				if raw {
					var m RawMessage
					if m, err = rd.NextRaw(); err == nil && m.Data != nil {
						n++
					}
				} else {
					var m Message
					if m, err = rd.Next(); err == nil && m.Batch != nil {
						if !array.RecordEqual(m.Batch, big) {
							t.Errorf("batch %d differs", n)
						}
						m.Batch.Release()
						n++
					}
				}
				if err != nil {
					break
				}
			}
			rd.Release()
			switch {
			case cut == len(full) && (err != io.EOF || n != 3):
				t.Errorf("raw %v, whole stream: %d batches, %v", raw, n, err)
			case cut < len(full) && !errors.Is(err, ErrTruncated):
				t.Errorf("raw %v, cut at %d of %d: %v, want ErrTruncated", raw, cut, len(full), err)
			}
		}
	}
}

// ForwardNext from a pipe into a file or a pipe (large bodies by splice(2), the rest as
// WriteRaw) writes the same bytes as NextRaw and WriteRaw; a source cut inside a large body
// is ErrTruncated.
func TestForwardNextSplice(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := testSchema()
	var in bytes.Buffer
	w := NewWriter(&in, s, mem)
	big := testBatch(mem, s, 200000)
	defer big.Release()
	small := testBatch(mem, s, 7)
	defer small.Release()
	if err := run(
		func() error { return w.Write(big) },
		func() error { return w.WriteControl(BarrierControl(1)) },
		func() error { return w.Write(small) },
		func() error { return w.Write(big) },
		func() error { return w.WriteControl(EndControl(Final)) },
		w.Close,
	); err != nil {
		t.Fatal(err)
	}
	full := in.Bytes()
	md := arrow.NewMetadata([]string{SchemaKey}, []string{"s"})
	out := arrow.NewSchema(s.Fields(), &md)
	want, err := forward(t, full, out, mem)
	if err != nil {
		t.Fatal(err)
	}
	for _, toPipe := range []bool{false, true} {
		for _, cut := range []int{len(full), len(full) - 100000} {
			got, err := forwardNext(t, full[:cut], out, toPipe, mem)
			switch {
			case cut == len(full) && err != nil:
				t.Fatalf("pipe %v: %v", toPipe, err)
			case cut == len(full) && !bytes.Equal(got, want):
				t.Fatalf("pipe %v: forwarded %d bytes, differing from NextRaw and WriteRaw's %d", toPipe, len(got), len(want))
			case cut < len(full) && !errors.Is(err, ErrTruncated):
				t.Fatalf("pipe %v, cut at %d of %d: %v, want ErrTruncated", toPipe, cut, len(full), err)
			}
		}
	}
}

// forwardNext feeds in through a pipe to ForwardNext, writing into a temporary file or a
// pipe, and returns what was written.
func forwardNext(t *testing.T, in []byte, out *arrow.Schema, toPipe bool, mem memory.Allocator) ([]byte, error) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() { pw.Write(in); pw.Close() }()
	var dst *os.File
	var written chan []byte
	if toPipe {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		written = make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r); written <- b }()
		dst = w
	} else if dst, err = os.CreateTemp(t.TempDir(), "fwd"); err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(pr, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	w := NewWriter(dst, out, mem)
	for err == nil {
		var c *Control
		if c, err = rd.ForwardNext(w, func(f func() error) error { return f() }); c != nil {
			err = w.WriteControl(*c)
		}
	}
	if err == io.EOF {
		err = w.Close()
	}
	dst.Close()
	if toPipe {
		return <-written, err
	}
	b, rerr := os.ReadFile(dst.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	return b, err
}
