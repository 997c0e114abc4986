package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/streamkit/streamkit/storage"
)

// The examples of PROTOCOL.md "Deletion Vector Descriptor Schema".
func TestDeletionVectorSpecExamples(t *testing.T) {
	u := &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: ptr(int32(4)), SizeInBytes: 40, Cardinality: 6}
	rel, err := u.RelativePath()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"; rel != want {
		t.Errorf("RelativePath = %q, want %q", rel, want)
	}
	noPrefix := &DeletionVector{StorageType: "u", PathOrInlineDv: "^-aqEH.-t@S}K{vb[*k^"}
	if rel, _ := noPrefix.RelativePath(); rel != "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin" {
		t.Errorf("RelativePath without prefix = %q", rel)
	}

	// Example 3's bitmap frames Delta's native format in big-endian order (magic 64 39 d3 d0,
	// count 1, size 28), which Spark's little-endian reader refuses too; its 32-bit roaring
	// bitmap holds 3, 4, 7, 11, 18, 29.
	in := &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	raw, err := Z85Decode(in.PathOrInlineDv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDeletionVector(context.Background(), nil, in, storage.Options{}); !errors.Is(err, ErrBadDeletionVector) {
		t.Errorf("big-endian example: err = %v", err)
	}
	// The same bitmap in the little-endian native framing Spark reads.
	le := binary.LittleEndian.AppendUint32(nil, dvMagicNative)
	le = binary.LittleEndian.AppendUint32(le, 1)
	le = binary.LittleEndian.AppendUint32(le, 28)
	le = append(le, raw[12:]...)
	bm, err := DecodeRoaringBitmapArray(le)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bm.ToArray(), []uint64{3, 4, 7, 11, 18, 29}; !slices.Equal(got, want) {
		t.Errorf("example rows = %v, want %v", got, want)
	}
}

func TestZ85Decode(t *testing.T) {
	// RFC 32's test vector.
	got, err := Z85Decode("HelloWorld")
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}; !bytes.Equal(got, want) {
		t.Errorf("Z85Decode(HelloWorld) = % x, want % x", got, want)
	}
	for _, bad := range []string{"Hell", "Hello~orld", "%%%%%"} {
		if _, err := Z85Decode(bad); !errors.Is(err, ErrBadDeletionVector) {
			t.Errorf("Z85Decode(%q): err = %v", bad, err)
		}
	}
}

// serializeDV is the RoaringBitmapArray of rows: magic number, then roaring64's portable format.
func serializeDV(t *testing.T, rows ...uint64) []byte {
	t.Helper()
	bm := roaring64.BitmapOf(rows...)
	bm.RunOptimize()
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(dvMagic))
	if _, err := bm.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadDeletionVectorFile(t *testing.T) {
	dir := t.TempDir()
	// Two DVs in one file, the second with buckets above 2^32 and a run container.
	var rows2 []uint64
	for i := range uint64(70000) {
		rows2 = append(rows2, 1000+i)
	}
	rows2 = append(rows2, 1<<32+5, 3<<32+7)
	dvs := [][]byte{serializeDV(t, 0, 9, 65536), serializeDV(t, rows2...)}
	file := []byte{1}
	var offs []int32
	for _, d := range dvs {
		offs = append(offs, int32(len(file)))
		file = binary.BigEndian.AppendUint32(file, uint32(len(d)))
		file = append(file, d...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(d))
	}
	if err := os.MkdirAll(filepath.Join(dir, "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "ab", "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin")
	if err := os.WriteFile(name, file, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Local(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &offs[1], SizeInBytes: int32(len(dvs[1])), Cardinality: int64(len(rows2))}
	bm, err := ReadDeletionVector(ctx, st, u, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bm.ToArray(), rows2) {
		t.Errorf("second DV: %d rows, max %d", bm.GetCardinality(), bm.Maximum())
	}
	p := &DeletionVector{StorageType: "p", PathOrInlineDv: "file://" + filepath.ToSlash(name), Offset: &offs[0], SizeInBytes: int32(len(dvs[0])), Cardinality: 3}
	bm, err = ReadDeletionVector(ctx, st, p, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); !slices.Equal(got, []uint64{0, 9, 65536}) {
		t.Errorf("first DV = %v", got)
	}
	// A flipped bit fails the checksum; a wrong size or offset is refused.
	file[offs[0]+6] ^= 1
	os.WriteFile(name, file, 0o644)
	if _, err := ReadDeletionVector(ctx, st, p, storage.Options{}); !errors.Is(err, ErrBadDeletionVector) {
		t.Errorf("corrupt DV: err = %v", err)
	}
	u.SizeInBytes--
	if _, err := ReadDeletionVector(ctx, st, u, storage.Options{}); !errors.Is(err, ErrBadDeletionVector) {
		t.Errorf("wrong size: err = %v", err)
	}
	u.SizeInBytes++
	u.Offset = ptr(int32(len(file)))
	if _, err := ReadDeletionVector(ctx, st, u, storage.Options{}); !errors.Is(err, ErrBadDeletionVector) {
		t.Errorf("offset past the end: err = %v", err)
	}
	missing := &DeletionVector{StorageType: "u", PathOrInlineDv: "^-aqEH.-t@S}K{vb[*k^", Offset: ptr(int32(1)), SizeInBytes: 40, Cardinality: 6}
	if _, err := ReadDeletionVector(ctx, st, missing, storage.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing DV file: err = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDVAbsoluteLocation(t *testing.T) {
	for in, want := range map[string]string{
		"file:///tmp/t/deletion_vector_x.bin":                                         "/tmp/t/deletion_vector_x.bin",
		"/tmp/t/a%20b/deletion_vector_x.bin":                                          "/tmp/t/a b/deletion_vector_x.bin",
		"s3://bucket/t/deletion_vector_x.bin":                                         "s3://bucket/t/deletion_vector_x.bin",
		"abfss://c@acct.dfs.core.windows.net/t/deletion_vector_x.bin":                 "abfss://c@acct.dfs.core.windows.net/t/deletion_vector_x.bin",
		"s3a://bucket/t%3Dx/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin": "s3a://bucket/t=x/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin",
	} {
		if got, err := dvAbsoluteLocation(in); err != nil || got != want {
			t.Errorf("dvAbsoluteLocation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"relative/deletion_vector_x.bin", "s3:///no-bucket.bin"} {
		if _, err := dvAbsoluteLocation(bad); !errors.Is(err, ErrBadDeletionVector) {
			t.Errorf("dvAbsoluteLocation(%q): err = %v", bad, err)
		}
	}
}

// A DV file Spark (delta-spark 4) wrote for DELETE ... WHERE id % 5 = 0 OR (id BETWEEN 200
// AND 450) OR (part = 'b' AND id % 2 = 0) on two files: part a (ids 0..1499 at rows 0..1499:
// array and run containers) and part b (ids 1500..11999 at rows 0..10499: a bitmap
// container). testdata/deletion_vector_8e5aa612-….bin, descriptors as in its commit.
func TestSparkDeletionVectorFile(t *testing.T) {
	st, err := storage.Local("testdata", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		offset, size int32
		card         int64
		first, n     uint64
		deleted      func(id uint64) bool
	}{
		{8233, 1032, 500, 0, 1500, func(id uint64) bool { return id%5 == 0 || (id >= 200 && id <= 450) }},
		{1, 8224, 6300, 1500, 10500, func(id uint64) bool { return id%5 == 0 || id%2 == 0 }},
	} {
		d := &DeletionVector{StorageType: "u", PathOrInlineDv: "J-@p)EZzA]Fid:5@8)+R", Offset: &c.offset, SizeInBytes: c.size, Cardinality: c.card}
		bm, err := ReadDeletionVector(context.Background(), st, d, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		for row := range c.n {
			if c.deleted(c.first + row) {
				want = append(want, row)
			}
		}
		if got := bm.ToArray(); !slices.Equal(got, want) {
			t.Errorf("DV at %d: %d rows, want %d", c.offset, len(got), len(want))
		}
	}
}
