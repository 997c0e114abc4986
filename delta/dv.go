package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/streamkit/streamkit/storage"
)

// Deletion vectors (PROTOCOL.md "Deletion Vectors", "Deletion Vector Format"): a logical file
// is a data file minus the rows whose indexes (positions in the Parquet file, from 0, across
// row groups) its deletion vector lists. The rows are a 64-bit roaring bitmap, stored inline in
// the log (Z85 text), or in a DV file next to the data (storage type "u", named after a UUID)
// or anywhere (storage type "p", an absolute URI).

// Storage types of a [DeletionVector].
const (
	DVStorageUUID     = "u" // a DV file at <table>/<prefix>/deletion_vector_<uuid>.bin
	DVStorageInline   = "i" // the bitmap itself, Z85-encoded in pathOrInlineDv
	DVStorageAbsolute = "p" // a DV file at an absolute URI
)

// dvMagic starts every serialized RoaringBitmapArray (little-endian int32).
const dvMagic = 1681511377

// dvMagicNative starts a RoaringBitmapArray in Delta's older native format.
const dvMagicNative = 1681511376

// dvFileVersion is the first byte of a DV file.
const dvFileVersion = 1

// maxDVBytes bounds the size of one serialized DV this package reads (a bitmap of every row
// of a file is far smaller: at most 8 KiB per 65536 rows).
const maxDVBytes = 1 << 30

// ErrBadDeletionVector marks a deletion vector descriptor or serialized DV that does not
// follow the protocol: a bad storage type, Z85 text, magic number, checksum, size or
// cardinality.
var ErrBadDeletionVector = errors.New("invalid deletion vector")

func badDV(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadDeletionVector}, args...)...)
}

// z85Alphabet is Z85's digit set (ZeroMQ RFC 32), digit value = index.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(z85Alphabet) {
		t[z85Alphabet[i]] = byte(i)
	}
	return t
}()

// Z85Decode decodes Z85 text (ZeroMQ RFC 32: every 5 characters are one big-endian 32-bit
// word, most significant digit first). Errors: a length that is not a multiple of 5, a
// character outside the alphabet, a group above 2^32−1.
func Z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, badDV("Z85 text of %d characters (not a multiple of 5)", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := range 5 {
			d := z85Value[s[i+j]]
			if d == 0xff {
				return nil, badDV("Z85 text has character %q at %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, badDV("Z85 group %q at %d is above 2^32-1", s[i:i+5], i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// RelativePath is the path of a "u" deletion vector's file relative to the table root:
// <random prefix>/deletion_vector_<uuid>.bin, the UUID being the last 20 characters of
// pathOrInlineDv in Z85, the prefix the characters before them (often none).
func (d *DeletionVector) RelativePath() (string, error) {
	if d.StorageType != DVStorageUUID {
		return "", badDV("storage type %q has no relative path", d.StorageType)
	}
	s := d.PathOrInlineDv
	if len(s) < 20 {
		return "", badDV("pathOrInlineDv %q is shorter than a Z85 UUID (20 characters)", s)
	}
	prefix, enc := s[:len(s)-20], s[len(s)-20:]
	u, err := Z85Decode(enc)
	if err != nil {
		return "", err
	}
	h := hex.EncodeToString(u)
	name := "deletion_vector_" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + ".bin"
	if prefix == "" {
		return name, nil
	}
	return prefix + "/" + name, nil
}

// ReadDeletionVector loads the deleted row indexes of a logical file: an inline DV from the
// descriptor, a "u" DV from its file in the table's store, a "p" DV from its absolute URI (in
// the table's store when it lies under the table root, else opened with opts). The bitmap's
// cardinality must equal the descriptor's. Errors wrap [ErrBadDeletionVector] for a DV that
// does not decode, fs.ErrNotExist for a missing DV file.
func ReadDeletionVector(ctx context.Context, store storage.Store, d *DeletionVector, opts storage.Options) (*roaring64.Bitmap, error) {
	if d.SizeInBytes < 0 || d.SizeInBytes > maxDVBytes {
		return nil, badDV("sizeInBytes %d", d.SizeInBytes)
	}
	var data []byte
	switch d.StorageType {
	case DVStorageInline:
		raw, err := Z85Decode(d.PathOrInlineDv)
		if err != nil {
			return nil, err
		}
		if int(d.SizeInBytes) > len(raw) {
			return nil, badDV("inline DV of %d bytes, sizeInBytes %d", len(raw), d.SizeInBytes)
		}
		data = raw[:d.SizeInBytes] // Z85 pads the bitmap to a multiple of 4 bytes
	case DVStorageUUID, DVStorageAbsolute:
		var err error
		if data, err = readDVFile(ctx, store, d, opts); err != nil {
			return nil, err
		}
	default:
		return nil, badDV("storage type %q (want u, i or p)", d.StorageType)
	}
	bm, err := DecodeRoaringBitmapArray(data)
	if err != nil {
		return nil, err
	}
	if n := bm.GetCardinality(); n != uint64(d.Cardinality) {
		return nil, badDV("bitmap has %d rows, cardinality says %d", n, d.Cardinality)
	}
	return bm, nil
}

// readDVFile reads one DV's bitmap bytes out of a DV file: at Offset (0 when absent) the
// big-endian int32 size, the bitmap, then its big-endian CRC-32 (IEEE).
func readDVFile(ctx context.Context, store storage.Store, d *DeletionVector, opts storage.Options) ([]byte, error) {
	st, name, err := dvFileStore(ctx, store, d, opts)
	if err != nil {
		return nil, err
	}
	f, err := st.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("deletion vector file %s: %w", name, err)
	}
	defer f.Close()
	var off int64
	if d.Offset != nil {
		off = int64(*d.Offset)
	}
	if off == 0 {
		// The file's first byte is its format version; DVs follow it.
		var v [1]byte
		if _, err := f.ReadAt(v[:], 0); err != nil {
			return nil, fmt.Errorf("deletion vector file %s: %w", name, err)
		}
		if v[0] != dvFileVersion {
			return nil, badDV("file %s has format version %d (want %d)", name, v[0], dvFileVersion)
		}
		off = 1
	}
	n := int64(d.SizeInBytes)
	if off < 1 || off+8+n > f.Size() {
		return nil, badDV("file %s of %d bytes has no DV of %d bytes at offset %d", name, f.Size(), n, off)
	}
	buf := make([]byte, 4+n+4)
	if _, err := f.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && off+int64(len(buf)) == f.Size()) {
		return nil, fmt.Errorf("deletion vector file %s: %w", name, err)
	}
	if got := int64(binary.BigEndian.Uint32(buf)); got != n {
		return nil, badDV("file %s at offset %d holds a DV of %d bytes, the descriptor says %d", name, off, got, n)
	}
	data := buf[4 : 4+n]
	if sum := binary.BigEndian.Uint32(buf[4+n:]); sum != crc32.ChecksumIEEE(data) {
		return nil, badDV("file %s at offset %d: checksum mismatch", name, off)
	}
	return data, nil
}

// FileInTable returns the name, relative to the table's store, of the file holding the
// deletion vector: the derived path of a "u" vector, the part below the table root of a "p"
// vector's URI; ok is false for an inline vector and for a file outside the table. An error
// is a "u" path that does not decode.
func (d *DeletionVector) FileInTable(store storage.Store) (name string, ok bool, err error) {
	switch d.StorageType {
	case DVStorageUUID:
		name, err = d.RelativePath()
		return name, err == nil, err
	case DVStorageAbsolute:
		abs, err := dvAbsoluteLocation(d.PathOrInlineDv)
		if err != nil {
			return "", false, err
		}
		name, ok = underRoot(store, abs)
		return name, ok, nil
	}
	return "", false, nil
}

// underRoot returns abs (a local path or a bucket URL) relative to the store's root, if below it.
func underRoot(store storage.Store, abs string) (string, bool) {
	root := store.LocalDir()
	if root == "" {
		root = store.Location()
	}
	rel, ok := strings.CutPrefix(abs, strings.TrimSuffix(root, "/")+"/")
	return rel, ok && rel != ""
}

// dvFileStore returns the store and name of a "u" or "p" DV's file.
func dvFileStore(ctx context.Context, store storage.Store, d *DeletionVector, opts storage.Options) (storage.Store, string, error) {
	if d.StorageType == DVStorageUUID {
		rel, err := d.RelativePath()
		return store, rel, err
	}
	abs, err := dvAbsoluteLocation(d.PathOrInlineDv)
	if err != nil {
		return nil, "", err
	}
	if rel, ok := underRoot(store, abs); ok {
		return store, rel, nil
	}
	dir, name := path.Split(abs)
	st, err := storage.Open(ctx, strings.TrimSuffix(dir, "/"), opts)
	if err != nil {
		return nil, "", fmt.Errorf("deletion vector file %s: %w", storage.Redact(abs), err)
	}
	return st, name, nil
}

// dvAbsoluteLocation turns a "p" DV's URI (percent-encoded like an add's path) into a local
// path (file: URIs and plain absolute paths) or a bucket URL that [storage.Open] takes.
func dvAbsoluteLocation(p string) (string, error) {
	u, err := url.Parse(p)
	if err != nil {
		return "", badDV("absolute path %q: %v", storage.Redact(p), err)
	}
	switch {
	case u.Scheme == "" || u.Scheme == "file":
		if !strings.HasPrefix(u.Path, "/") {
			return "", badDV("absolute path %q is not absolute", p)
		}
		return u.Path, nil
	case u.Host == "":
		return "", badDV("absolute path %q has no bucket", storage.Redact(p))
	}
	host := u.Host
	if u.User != nil { // abfss://container@account.dfs.core.windows.net/…
		host = u.User.Username() + "@" + host
	}
	return u.Scheme + "://" + host + u.Path, nil
}

// DecodeRoaringBitmapArray decodes Delta's serialized RoaringBitmapArray: the little-endian
// magic number, then the bitmap. Magic 1681511377 (the protocol's format, which Spark writes):
// a 64-bit roaring bitmap in the portable format of the Roaring format specification (a
// little-endian uint64 bucket count, then per bucket its 32-bit key and a portable 32-bit
// roaring bitmap), read by roaring64. Magic 1681511376 (Delta's older "native" format, which
// Spark and Delta Kernel still read): a little-endian int32 count, then per bucket (keys 0, 1,
// …) an int32 size and a portable 32-bit roaring bitmap. Keys must have a 0 top bit.
func DecodeRoaringBitmapArray(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 8 {
		return nil, badDV("bitmap of %d bytes", len(data))
	}
	bm := roaring64.New()
	r := bytes.NewReader(data[4:])
	switch m := binary.LittleEndian.Uint32(data); m {
	case dvMagic:
		if _, err := bm.ReadFrom(r); err != nil {
			return nil, badDV("bitmap: %v", err)
		}
	case dvMagicNative:
		n := binary.LittleEndian.Uint32(data[4:])
		r.Seek(4, io.SeekStart)
		for key := range uint64(n) {
			var size [4]byte
			if _, err := io.ReadFull(r, size[:]); err != nil {
				return nil, badDV("bitmap %d of %d: %v", key, n, err)
			}
			sz := int64(binary.LittleEndian.Uint32(size[:]))
			if sz > int64(r.Len()) {
				return nil, badDV("bitmap %d of %d has %d bytes, %d left", key, n, sz, r.Len())
			}
			raw := make([]byte, sz)
			io.ReadFull(r, raw)
			b := roaring.New()
			if err := b.UnmarshalBinary(raw); err != nil {
				return nil, badDV("bitmap %d of %d: %v", key, n, err)
			}
			it := b.Iterator()
			for it.HasNext() {
				bm.Add(key<<32 | uint64(it.Next()))
			}
		}
	default:
		return nil, badDV("bitmap magic number %d (want %d)", m, dvMagic)
	}
	if r.Len() != 0 {
		return nil, badDV("bitmap has %d bytes after its end", r.Len())
	}
	if !bm.IsEmpty() && bm.Maximum()>>63 != 0 {
		return nil, badDV("bitmap holds a row index with the top bit set")
	}
	return bm, nil
}
