package expr

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/cespare/xxhash/v2"
)

// Spark's hash functions: hash (Murmur3 x86_32) and xxhash64 (XXH64), both seeded with 42
// and chained over their arguments (each argument's hash is the seed of the next; a NULL
// argument leaves the seed as it is), hashing each type as Spark's HashExpression does:
// boolean as the int 0/1, int and date as 4 bytes, bigint, timestamp and interval as 8
// bytes, double as the 8 bytes of its bits with -0.0 as 0.0 and one NaN, a decimal of
// precision ≤ 18 as its unscaled bigint and a wider one as the big-endian two's-complement
// bytes of its unscaled value (Java's BigInteger.toByteArray), strings and binary as their
// bytes. A float (float32) column named directly as an argument hashes as Spark hashes a
// float (the int of its 4 bits, -0.0f as 0.0f, one NaN); other columns read as a wider type
// hash as that type: tinyint and smallint as int (as Spark does), a float inside an
// expression (hash(f + 1)) as a double (Spark keeps float arithmetic in float).

const sparkHashSeed = 42

// Murmur3 x86_32 as Spark's Murmur3_x86_32, written out because its hashUnsafeBytes mixes
// each of the last len%4 bytes as a whole (sign-extended) block instead of the standard
// tail: standard libraries give other values for strings whose length is not a multiple of 4.
func murmurMixK1(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func murmurMixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func murmurFmix(h, n uint32) uint32 {
	h ^= n
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

func murmurInt(v, seed uint32) uint32 { return murmurFmix(murmurMixH1(seed, murmurMixK1(v)), 4) }

func murmurLong(v uint64, seed uint32) uint32 {
	h := murmurMixH1(seed, murmurMixK1(uint32(v)))
	h = murmurMixH1(h, murmurMixK1(uint32(v>>32)))
	return murmurFmix(h, 8)
}

func murmurBytes(b []byte, seed uint32) uint32 {
	h := seed
	n := len(b) - len(b)%4
	for i := 0; i < n; i += 4 {
		h = murmurMixH1(h, murmurMixK1(binary.LittleEndian.Uint32(b[i:])))
	}
	for _, c := range b[n:] {
		h = murmurMixH1(h, murmurMixK1(uint32(int32(int8(c)))))
	}
	return murmurFmix(h, uint32(len(b)))
}

// xxh64 hashes with XXH64 (Spark's XXH64 is the standard algorithm; its hashInt and hashLong
// equal the hash of the 4 or 8 little-endian bytes).
type xxh64 struct {
	d   *xxhash.Digest
	buf [8]byte
}

func (x *xxh64) bytes(b []byte, seed uint64) uint64 {
	x.d.ResetWithSeed(seed)
	x.d.Write(b)
	return x.d.Sum64()
}
func (x *xxh64) int(v uint32, seed uint64) uint64 {
	binary.LittleEndian.PutUint32(x.buf[:4], v)
	return x.bytes(x.buf[:4], seed)
}
func (x *xxh64) long(v uint64, seed uint64) uint64 {
	binary.LittleEndian.PutUint64(x.buf[:], v)
	return x.bytes(x.buf[:], seed)
}

// hasher is one of the two hash families over Spark's value encodings.
type hasher[H uint32 | uint64] struct {
	int   func(v uint32, seed H) H
	long  func(v uint64, seed H) H
	bytes func(b []byte, seed H) H
}

// normDouble is the bits Spark hashes for a double: -0.0 as 0.0, every NaN as Java's one.
func normDouble(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case math.IsNaN(f):
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// normFloat is the bits Spark hashes for a float: -0.0f as 0.0f, every NaN as Java's one.
func normFloat(f float32) uint32 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return 0x7fc00000
	}
	return math.Float32bits(f)
}

// javaBigIntBytes is Java's BigInteger.toByteArray: the minimal big-endian two's complement.
func javaBigIntBytes(x *big.Int) []byte {
	if x.Sign() >= 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	y := new(big.Int).Neg(x)
	y.Sub(y, big.NewInt(1))
	b := y.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// hashColumn folds column a of type t into the running hashes h (row by row; NULL rows keep
// their hash).
func hashColumn[H uint32 | uint64](f hasher[H], t Type, a arrow.Array, h []H) {
	hashColumnAt(f, t, a, h, nil)
}

// rowsAt maps hash slot i to its value of a: rows[i] (rows nil: i); ok is false for a
// negative row or a NULL value. A method of a plain struct, so that it inlines.
type rowsAt struct {
	rows  []int32
	valid []byte // a's validity bitmap, nil without NULLs
	off   int    // a's offset into it
}

func (r *rowsAt) at(i int) (int, bool) {
	j := i
	if r.rows != nil {
		if j = int(r.rows[i]); j < 0 {
			return 0, false
		}
	}
	return j, r.valid == nil || bitutil.BitIsSet(r.valid, r.off+j)
}

// hashColumnAt folds value rows[i] of a into h[i] (rows nil: value i; a negative row or a
// NULL value leaves h[i] as it is). An array folds in its elements in order and a struct its
// fields, as Spark's HashExpression does: element k of every row in round k, so that each
// round is one pass over the element values.
func hashColumnAt[H uint32 | uint64](f hasher[H], t Type, a arrow.Array, h []H, rows []int32) {
	r := &rowsAt{rows: rows, off: a.Data().Offset()}
	if a.NullN() > 0 {
		r.valid = a.NullBitmapBytes()
	}
	switch t.Kind {
	case KNull:
	case KBool:
		b := a.(*array.Boolean)
		for i := range h {
			if j, ok := r.at(i); ok {
				v := uint32(0)
				if b.Value(j) {
					v = 1
				}
				h[i] = f.int(v, h[i])
			}
		}
	case KInt, KDate, KYearMonth:
		vs := i32s(a)
		for i := range h {
			if j, ok := r.at(i); ok {
				h[i] = f.int(uint32(vs[j]), h[i])
			}
		}
	case KBigInt, KTimestamp, KInterval:
		vs := i64s(a)
		for i := range h {
			if j, ok := r.at(i); ok {
				h[i] = f.long(uint64(vs[j]), h[i])
			}
		}
	case KDouble:
		if fa, ok := a.(*array.Float32); ok { // a float column, kept by its colNode
			vs := fa.Float32Values()
			for i := range h {
				if j, ok := r.at(i); ok {
					h[i] = f.int(normFloat(vs[j]), h[i])
				}
			}
			return
		}
		vs := f64s(a)
		for i := range h {
			if j, ok := r.at(i); ok {
				h[i] = f.long(normDouble(vs[j]), h[i])
			}
		}
	case KDecimal:
		vs := decs(a)
		for i := range h {
			j, ok := r.at(i)
			if !ok {
				continue
			}
			if t.P <= 18 {
				h[i] = f.long(uint64(int64(vs[j].LowBits())), h[i])
			} else {
				h[i] = f.bytes(javaBigIntBytes(vs[j].BigInt()), h[i])
			}
		}
	case KString:
		s := a.(*array.String)
		for i := range h {
			if j, ok := r.at(i); ok {
				h[i] = f.bytes(strBytes(s.Value(j)), h[i])
			}
		}
	case KBinary:
		b := a.(*array.Binary)
		for i := range h {
			if j, ok := r.at(i); ok {
				h[i] = f.bytes(b.Value(j), h[i])
			}
		}
	case KStruct:
		sub := make([]int32, len(h)) // the rows of valid structs, -1 elsewhere
		for i := range h {
			sub[i] = -1
			if j, ok := r.at(i); ok {
				sub[i] = int32(j)
			}
		}
		st := a.(*array.Struct)
		for k, fd := range t.Fields() {
			hashColumnAt(f, fd.Type, st.Field(k), h, sub)
		}
	case KArray:
		// the rows with a k-th element, their hashes gathered into hs for round k
		off, vals := listParts(a)
		var live, elems []int32
		for i := range h {
			if j, ok := r.at(i); ok && off[j] < off[j+1] {
				live = append(live, int32(i))
				elems = append(elems, off[j])
			}
		}
		hs := make([]H, len(live))
		for len(live) > 0 {
			for m, i := range live {
				hs[m] = h[i]
			}
			hashColumnAt(f, t.Elem(), vals, hs[:len(live)], elems)
			n := 0
			for m, i := range live {
				h[i] = hs[m]
				j, _ := r.at(int(i))
				if e := elems[m] + 1; e < off[j+1] {
					live[n], elems[n] = i, e
					n++
				}
			}
			live, elems = live[:n], elems[:n]
		}
	}
}

// hashable reports whether hash and xxhash64 take a value of type t: atomic values, and
// arrays and structs of them (Spark 4 refuses maps: HASH_MAP_TYPE).
func hashable(t Type) bool {
	switch t.Kind {
	case KNull, KBool, KInt, KBigInt, KDecimal, KDouble, KString, KDate, KTimestamp, KInterval, KBinary, KYearMonth:
		return true
	case KArray:
		return hashable(t.Elem())
	case KStruct:
		for _, fd := range t.Fields() {
			if !hashable(fd.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// digestFunc registers a digest of one bytes argument printed as lower-case hex.
func digestFunc(name, doc string, sum func(out *strOut, b []byte)) {
	bytesMap(name, TString, name+"(binary or str) → string", doc, sum)
}

func init() {
	for _, name := range []string{"hash", "xxhash64"} {
		result := TInt
		doc := "Spark's Murmur3 x86_32 hash of the arguments, seed 42 (NULLs skipped; arrays and structs chain their elements and fields)"
		if name == "xxhash64" {
			result = TBigInt
			doc = "Spark's XXH64 hash of the arguments, seed 42 (NULLs skipped; arrays and structs chain their elements and fields)"
		}
		register(name, 1, -1, name+"(x, …) → "+result.String(), doc, false, func(c *checker, call *Call, args []node) (node, error) {
			types := make([]Type, len(args))
			for i, a := range args {
				if !hashable(a.Type()) {
					return nil, c.argErr(call, i, a.Type(), "of an atomic type, or an array or struct of them")
				}
				types[i] = a.Type()
				if col, ok := a.(*colNode); ok && col.t.Kind == KDouble {
					keep := *col
					keep.keepFloat32 = true
					args[i] = &keep
				}
			}
			return &funcNode{fn: registry[name], t: result, args: args, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				if result.Kind == KInt {
					out := newOut[int32](c.n)
					h := make([]uint32, c.n)
					for i := range h {
						h[i] = sparkHashSeed
					}
					f := hasher[uint32]{int: murmurInt, long: murmurLong, bytes: murmurBytes}
					for k, a := range in {
						hashColumn(f, types[k], a, h)
					}
					for i, v := range h {
						out.vals[i] = int32(v)
					}
					return out.array(TInt), nil
				}
				out := newOut[int64](c.n)
				h := make([]uint64, c.n)
				for i := range h {
					h[i] = sparkHashSeed
				}
				x := &xxh64{d: xxhash.NewWithSeed(0)}
				f := hasher[uint64]{int: x.int, long: x.long, bytes: x.bytes}
				for k, a := range in {
					hashColumn(f, types[k], a, h)
				}
				for i, v := range h {
					out.vals[i] = int64(v)
				}
				return out.array(TBigInt), nil
			}}, nil
		})
	}

	digestFunc("md5", "the MD5 digest as 32 hex digits", func(out *strOut, b []byte) { s := md5.Sum(b); out.appendHex(s[:], false) })
	for _, name := range []string{"sha1", "sha"} {
		digestFunc(name, "the SHA-1 digest as 40 hex digits", func(out *strOut, b []byte) { s := sha1.Sum(b); out.appendHex(s[:], false) })
	}
	register("crc32", 1, 1, "crc32(binary or str) → bigint", "the CRC-32 (IEEE) checksum", false, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.binArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["crc32"], t: TBigInt, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			b := in[0].(*array.Binary)
			out := newOut[int64](c.n)
			for i := range out.vals {
				if b.IsNull(i) {
					out.setNull(i)
					continue
				}
				out.vals[i] = int64(crc32.ChecksumIEEE(b.Value(i)))
			}
			return out.array(TBigInt), nil
		}}, nil
	})
	register("sha2", 2, 2, "sha2(binary or str, bits) → string", "the SHA-2 digest in hex: bits 224, 256 (or 0), 384 or 512; NULL for other bits", false, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.binArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		n, err := c.intArg(call, args, 1)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["sha2"], t: TString, args: []node{a, n}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			b, bitsCol := in[0].(*array.Binary), in[1]
			bs := i32s(bitsCol)
			out := newStrOut(c.n, c.n*64)
			for i := 0; i < c.n; i++ {
				if b.IsNull(i) || bitsCol.IsNull(i) {
					out.appendNull()
					continue
				}
				v := b.Value(i)
				switch bs[i] {
				case 0, 256:
					s := sha256.Sum256(v)
					out.appendHex(s[:], false)
				case 224:
					s := sha256.Sum224(v)
					out.appendHex(s[:], false)
				case 384:
					s := sha512.Sum384(v)
					out.appendHex(s[:], false)
				case 512:
					s := sha512.Sum512(v)
					out.appendHex(s[:], false)
				default:
					out.appendNull()
				}
			}
			return out.array(), nil
		}}, nil
	})
}
