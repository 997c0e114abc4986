package expr

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// The binary type and the functions over bytes: CAST between string and binary, hex and
// unhex, base64 and unbase64, encode and decode (hash.go has the digests and hashes).

// retype returns a with its buffers read as type dt: utf8 and binary share one layout, so
// CAST(string AS BINARY) and CAST(binary AS STRING) copy nothing (Spark keeps the bytes as
// they are in both directions, invalid UTF-8 included).
func retype(a arrow.Array, dt arrow.DataType) arrow.Array {
	d := a.Data()
	nd := array.NewData(dt, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// castBinary is CAST between string and binary (the only casts Spark's ANSI mode allows to
// and from binary).
func castBinary(to Type, x arrow.Array) arrow.Array {
	return retype(x, to.Arrow())
}

// binaryLit is the constant of an X'…' literal: hex digits, a leading 0 added to an odd
// count (as Spark's parser does).
func (c *checker) binaryLit(l *Lit) (node, error) {
	h := l.Text
	if len(h)%2 == 1 {
		h = "0" + h
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, c.errf(l.At, "X'%s' is not a valid binary literal: it must hold hex digits only", l.Text)
	}
	return binConst(b), nil
}

func binConst(b []byte) *constNode {
	return &constNode{t: TBinary, sc: scalar.NewBinaryScalar(memory.NewBufferBytes(b), arrow.BinaryTypes.Binary)}
}

// binArg is argument i of a function over bytes: binary as it is, a string as its UTF-8
// bytes (Spark's implicit cast of string to binary), NULL as a binary NULL.
func (c *checker) binArg(call *Call, args []node, i int) (node, error) {
	switch args[i].Type().Kind {
	case KBinary, KString, KNull:
		return coerce(args[i], TBinary), nil
	}
	return nil, c.argErr(call, i, args[i].Type(), "binary or a string")
}

// strBytes is the bytes of a string without a copy.
func strBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// binOut appends the rows of a binary column: it is a strOut whose array is typed binary.
func (o *strOut) binArray() arrow.Array { return o.arrayOf(arrow.BinaryTypes.Binary) }

// appendHex appends the upper- or lower-case hex digits of b as one value.
func (o *strOut) appendHex(b []byte, upper bool) {
	at := len(o.data)
	o.data = hex.AppendEncode(o.data, b)
	if upper {
		for k := at; k < len(o.data); k++ {
			if c := o.data[k]; c >= 'a' {
				o.data[k] = c - 'a' + 'A'
			}
		}
	}
	o.offs = append(o.offs, int32(len(o.data)))
}

// bytesMap registers a function of one bytes argument (binary or string) computed per value
// by f, which appends its result to out (or a NULL).
func bytesMap(name string, result Type, sig, doc string, f func(out *strOut, b []byte)) {
	register(name, 1, 1, sig, doc, false, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.binArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry[name], t: result, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			return bytesLoop(c, in[0].(*array.Binary), result, len(in[0].(*array.Binary).ValueBytes())*2, f), nil
		}}, nil
	})
}

// bytesLoop runs f over every non-NULL value of b into a string or binary column.
func bytesLoop(c *evalCtx, b *array.Binary, result Type, sizeHint int, f func(out *strOut, b []byte)) arrow.Array {
	out := newStrOut(c.n, sizeHint)
	for i := 0; i < c.n; i++ {
		if b.IsNull(i) {
			out.appendNull()
			continue
		}
		f(out, b.Value(i))
	}
	if result.Kind == KBinary {
		return out.binArray()
	}
	return out.array()
}

// unhexInto decodes Spark's unhex: hex digits of either case, a leading 0 assumed for an odd
// count; ok is false for any other character (Spark: NULL).
func unhexInto(dst, s []byte) ([]byte, bool) {
	at := len(dst)
	odd := len(s) % 2
	if odd == 1 {
		v, ok := hexDigit(s[0])
		if !ok {
			return dst[:at], false
		}
		dst = append(dst, v)
	}
	for k := odd; k+1 < len(s)+1 && k < len(s); k += 2 {
		hi, ok1 := hexDigit(s[k])
		lo, ok2 := hexDigit(s[k+1])
		if !ok1 || !ok2 {
			return dst[:at], false
		}
		dst = append(dst, hi<<4|lo)
	}
	return dst, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// charsetOf checks encode/decode's charset argument: a constant naming UTF-8 (the only
// charset this package converts; Spark also knows US-ASCII, ISO-8859-1 and the UTF-16s).
func (c *checker) charsetOf(call *Call, args []node, i int) error {
	k, ok := args[i].(*constNode)
	if !ok || args[i].Type().Kind != KString && args[i].Type().Kind != KNull {
		return c.argErr(call, i, args[i].Type(), "a constant charset name")
	}
	if !k.sc.IsValid() {
		return nil
	}
	if strings.EqualFold(k.sc.(*scalar.String).String(), "UTF-8") {
		return nil
	}
	return c.errf(call.Args[i].Pos(), "%s: charset %s is not supported (only UTF-8)", call.Name, quoteValue(k.sc.(*scalar.String).String()))
}

func init() {
	for _, name := range []string{"octet_length", "bit_length"} {
		bits := name == "bit_length"
		register(name, 1, 1, name+"(str or binary) → int", "the number of "+map[bool]string{false: "bytes", true: "bits"}[bits]+" of the string's UTF-8 form or of the binary", false, func(c *checker, call *Call, args []node) (node, error) {
			a, err := c.binArg(call, args, 0)
			if err != nil {
				return nil, err
			}
			mul := int32(1)
			if bits {
				mul = 8
			}
			return byteLength(registry[name], a, mul), nil
		})
	}

	register("hex", 1, 1, "hex(bigint, string or binary) → string", "upper-case hex digits: of the 64-bit two's complement of a number (a double or decimal cast to bigint first), of the UTF-8 bytes of a string (booleans, dates and timestamps as their text), of a binary", false, func(c *checker, call *Call, args []node) (node, error) {
		switch t := args[0].Type(); t.Kind {
		case KBool, KDate, KTimestamp: // Spark's implicit cast to string
			args = []node{coerce(args[0], TString)}
		case KInt, KBigInt, KDouble, KDecimal: // ANSI: a fractional number truncates, an overflow fails
			x := coerce(args[0], TBigInt)
			return &funcNode{fn: registry["hex"], t: TString, args: []node{x}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
				vs := i64s(in[0])
				out := newStrOut(c.n, c.n*4)
				for i := range vs {
					if isNull(in[0], i) {
						out.appendNull()
						continue
					}
					out.data = strconv.AppendUint(out.data, uint64(vs[i]), 16)
					for k := len(out.data) - 1; k >= 0 && k >= int(out.offs[len(out.offs)-1]); k-- {
						if ch := out.data[k]; ch >= 'a' {
							out.data[k] = ch - 'a' + 'A'
						}
					}
					out.offs = append(out.offs, int32(len(out.data)))
				}
				return out.array(), nil
			}}, nil
		}
		a, err := c.binArg(call, args, 0)
		if err != nil {
			return nil, c.argErr(call, 0, args[0].Type(), "a bigint, a string or binary")
		}
		return &funcNode{fn: registry["hex"], t: TString, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			b := in[0].(*array.Binary)
			return bytesLoop(c, b, TString, 2*len(b.ValueBytes()), func(out *strOut, v []byte) { out.appendHex(v, true) }), nil
		}}, nil
	})

	register("unhex", 1, 1, "unhex(str) → binary", "the bytes of hex digits (a leading 0 added to an odd count); NULL for a character that is not a hex digit", false, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.strArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["unhex"], t: TBinary, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
			s := in[0].(*array.String)
			out := newStrOut(c.n, len(s.ValueBytes())/2+1)
			for i := 0; i < c.n; i++ {
				if s.IsNull(i) {
					out.appendNull()
					continue
				}
				d, ok := unhexInto(out.data, strBytes(s.Value(i)))
				if !ok {
					out.appendNull()
					continue
				}
				out.data = d
				out.offs = append(out.offs, int32(len(out.data)))
			}
			return out.binArray(), nil
		}}, nil
	})

	bytesMap("base64", TString, "base64(binary or str) → string", "the Base64 encoding with padding, in lines of 76 characters joined by CRLF (Java's MIME encoder, as Spark's default spark.sql.chunkBase64String.enabled)",
		func(out *strOut, b []byte) {
			for len(b) > 57 { // 57 bytes make a line of 76 characters
				out.data = base64.StdEncoding.AppendEncode(out.data, b[:57])
				out.data = append(out.data, '\r', '\n')
				b = b[57:]
			}
			out.data = base64.StdEncoding.AppendEncode(out.data, b)
			out.offs = append(out.offs, int32(len(out.data)))
		})

	register("unbase64", 1, 1, "unbase64(str) → binary", "the bytes of Base64 text as Java's MIME decoder reads it: characters outside the alphabet are skipped, padding is optional; a dangling last character or misplaced padding fails", true, func(c *checker, call *Call, args []node) (node, error) {
		a, err := c.strArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: registry["unbase64"], t: TBinary, args: []node{a}, impl: evalUnbase64}, nil
	})

	register("encode", 2, 2, "encode(str, 'UTF-8') → binary", "the string's bytes in the charset (UTF-8 only)", false, func(c *checker, call *Call, args []node) (node, error) {
		if err := c.charsetOf(call, args, 1); err != nil {
			return nil, err
		}
		a, err := c.strArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		if isNullConst(args[1]) {
			return nullConst(TBinary), nil
		}
		return coerce(a, TBinary), nil
	})
	register("decode", 2, 2, "decode(binary, 'UTF-8') → string", "the bytes read in the charset (UTF-8 only); bytes that are not UTF-8 fail (MALFORMED_CHARACTER_CODING)", true, func(c *checker, call *Call, args []node) (node, error) {
		if err := c.charsetOf(call, args, 1); err != nil {
			return nil, err
		}
		a, err := c.binArg(call, args, 0)
		if err != nil {
			return nil, err
		}
		if isNullConst(args[1]) {
			return nullConst(TString), nil
		}
		return &funcNode{fn: registry["decode"], t: TString, args: []node{a}, impl: func(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
			b := in[0].(*array.Binary)
			if !utf8.Valid(b.ValueBytes()) {
				for i := 0; i < c.n; i++ {
					if b.IsValid(i) && activeAt(active, i) && !utf8.Valid(b.Value(i)) {
						return nil, c.fail("MALFORMED_CHARACTER_CODING", i, "decode: the bytes %X are not valid UTF-8", b.Value(i))
					}
				}
			}
			return retype(b, arrow.BinaryTypes.String), nil
		}}, nil
	})
}

func isNullConst(n node) bool {
	k, ok := n.(*constNode)
	return ok && k.isNull()
}

// byteLength is the byte count (times mul) of a binary argument.
func byteLength(def *funcDef, a node, mul int32) node {
	return &funcNode{fn: def, t: TInt, args: []node{a}, impl: func(c *evalCtx, _ []bool, in []arrow.Array) (arrow.Array, error) {
		b := in[0].(*array.Binary)
		out := newOut[int32](c.n)
		for i := range out.vals {
			if b.IsNull(i) {
				out.setNull(i)
				continue
			}
			out.vals[i] = int32(b.ValueLen(i)) * mul
		}
		return out.array(TInt), nil
	}}
}

// evalUnbase64 decodes Base64 text the way Java's MIME decoder (Spark's unbase64) does.
func evalUnbase64(c *evalCtx, active []bool, in []arrow.Array) (arrow.Array, error) {
	s := in[0].(*array.String)
	out := newStrOut(c.n, len(s.ValueBytes()))
	for i := 0; i < c.n; i++ {
		if s.IsNull(i) {
			out.appendNull()
			continue
		}
		d, ok := mimeDecode(out.data, s.Value(i))
		if !ok {
			if activeAt(active, i) {
				return nil, c.fail("INVALID_PARAMETER_VALUE", i, "unbase64: %s is not valid Base64 (a dangling last character or misplaced padding)", quoteValue(s.Value(i)))
			}
			out.appendNull()
			continue
		}
		out.data = d
		out.offs = append(out.offs, int32(len(out.data)))
	}
	return out.binArray(), nil
}

// mimeDecode follows java.util.Base64.getMimeDecoder: characters outside the alphabet are
// ignored; '=' ends the data (two are needed after 2 characters of a unit, none is allowed at
// a unit's start); after it only characters outside the alphabet may follow; a unit of one
// character is an error.
func mimeDecode(dst []byte, s string) ([]byte, bool) {
	var bits uint32
	n := 0 // characters in the current unit
	k := 0
	for ; k < len(s); k++ {
		ch := s[k]
		if ch == '=' {
			switch n {
			case 0:
				return dst, false
			case 2:
				k++
				if k >= len(s) || s[k] != '=' {
					return dst, false
				}
			}
			k++
			break
		}
		v, ok := base64Value(ch)
		if !ok {
			continue
		}
		bits = bits<<6 | uint32(v)
		n++
		if n == 4 {
			dst = append(dst, byte(bits>>16), byte(bits>>8), byte(bits))
			bits, n = 0, 0
		}
	}
	switch n {
	case 1:
		return dst, false
	case 2:
		dst = append(dst, byte(bits>>4))
	case 3:
		dst = append(dst, byte(bits>>10), byte(bits>>2))
	}
	for ; k < len(s); k++ {
		if _, ok := base64Value(s[k]); ok {
			return dst, false
		}
	}
	return dst, true
}

func base64Value(c byte) (byte, bool) {
	switch {
	case c >= 'A' && c <= 'Z':
		return c - 'A', true
	case c >= 'a' && c <= 'z':
		return c - 'a' + 26, true
	case c >= '0' && c <= '9':
		return c - '0' + 52, true
	case c == '+':
		return 62, true
	case c == '/':
		return 63, true
	}
	return 0, false
}

// allBinary reports whether every argument is binary.
func allBinary(args []node) bool {
	for _, a := range args {
		if a.Type().Kind != KBinary {
			return false
		}
	}
	return len(args) > 0
}
