package formats

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/linkedin/goavro/v2"

	"github.com/streamkit/streamkit/codec/schema"
)

// avroReader decodes an Avro object container file with goavro into Arrow batches. The Arrow
// schema is schema.FromAvro of the writer schema; values are converted by walking the Avro
// schema beside the Arrow builders (goavro's native values: maps for records, single-key maps
// for union branches, time.Time for timestamp/date logical types, *big.Rat for decimals).
type avroReader struct {
	schema *arrow.Schema
	ocf    *goavro.OCFReader
	conv   *avroNode
	sb     *array.StructBuilder
	max    int
}

func newAvroReader(r io.Reader, opts Options) (*avroReader, error) {
	ocf, err := goavro.NewOCFReader(r)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	doc := ocf.Codec().Schema()
	s, err := schema.FromAvro([]byte(doc))
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal([]byte(doc), &tree); err != nil {
		return nil, fmt.Errorf("avro: writer schema: %w", err)
	}
	c := &avroCompiler{named: map[string]*avroNode{}}
	node, err := c.compile(tree, "")
	if err != nil {
		return nil, err
	}
	return &avroReader{
		schema: s, ocf: ocf, conv: node, max: opts.BatchRows,
		sb: array.NewStructBuilder(opts.Allocator, arrow.StructOf(s.Fields()...)),
	}, nil
}

func (a *avroReader) next() (arrow.RecordBatch, []int64, []int64, error) {
	n := 0
	for n < a.max && a.ocf.Scan() {
		v, err := a.ocf.Read()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("avro: record: %w", err)
		}
		if err := a.conv.appendTo(a.sb, v); err != nil {
			return nil, nil, nil, fmt.Errorf("avro: record: %w", err)
		}
		n++
	}
	if err := a.ocf.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("avro: %w", err)
	}
	if n == 0 {
		return nil, nil, nil, io.EOF
	}
	sa := a.sb.NewStructArray()
	defer sa.Release()
	return array.RecordFromStructArray(sa, a.schema), nil, nil, nil
}

func (a *avroReader) release() { a.sb.Release() }

// avroNode is a compiled Avro schema node.
type avroNode struct {
	typ     string // primitive name, record, enum, array, map, fixed, union
	logical string
	scale   int32
	fields  []avroField
	items   *avroNode
	members []*avroNode // union members other than null
	names   map[string]int
	nullIdx bool
}

type avroField struct {
	name string
	node *avroNode
}

type avroCompiler struct {
	named map[string]*avroNode
}

// branchName is goavro's key for a union branch: the full name of named types, "type.logical"
// for logical types, else the type name.
func branchName(n *avroNode, full string) string {
	if full != "" {
		return full
	}
	if n.logical != "" {
		return n.typ + "." + n.logical
	}
	return n.typ
}

func (c *avroCompiler) compile(t any, ns string) (*avroNode, error) {
	n, _, err := c.compileNamed(t, ns)
	return n, err
}

func (c *avroCompiler) compileNamed(t any, ns string) (*avroNode, string, error) {
	switch t := t.(type) {
	case string:
		switch t {
		case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
			return &avroNode{typ: t}, "", nil
		}
		full := t
		if !strings.Contains(t, ".") && ns != "" {
			full = ns + "." + t
		}
		if n, ok := c.named[full]; ok {
			return n, full, nil
		}
		if n, ok := c.named[t]; ok {
			return n, t, nil
		}
		return nil, "", fmt.Errorf("avro: unknown type %q", t)
	case []any:
		u := &avroNode{typ: "union", names: map[string]int{}}
		for _, m := range t {
			if s, ok := m.(string); ok && s == "null" {
				u.nullIdx = true
				continue
			}
			mn, full, err := c.compileNamed(m, ns)
			if err != nil {
				return nil, "", err
			}
			// goavro keys a branch by its codec's name: the full name of named types,
			// "type.logical" for the logical types it knows, the bare type otherwise.
			for _, key := range []string{branchName(mn, full), mn.typ} {
				if _, dup := u.names[key]; !dup {
					u.names[key] = len(u.members)
				}
			}
			u.members = append(u.members, mn)
		}
		return u, "", nil
	case map[string]any:
		typ, _ := t["type"].(string)
		if typ == "" {
			return c.compileNamed(t["type"], ns)
		}
		n := &avroNode{typ: typ}
		n.logical, _ = t["logicalType"].(string)
		if s, ok := t["scale"].(float64); ok {
			n.scale = int32(s)
		}
		full := ""
		if name, ok := t["name"].(string); ok && (typ == "record" || typ == "error" || typ == "enum" || typ == "fixed") {
			if nsv, ok := t["namespace"].(string); ok && !strings.Contains(name, ".") {
				ns = nsv
			}
			full = name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			if i := strings.LastIndexByte(full, '.'); i >= 0 {
				ns = full[:i]
			}
			c.named[full] = n
		}
		switch typ {
		case "record", "error":
			n.typ = "record"
			fs, _ := t["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				fn, err := c.compile(fm["type"], ns)
				if err != nil {
					return nil, "", err
				}
				n.fields = append(n.fields, avroField{name: name, node: fn})
			}
		case "array":
			it, err := c.compile(t["items"], ns)
			if err != nil {
				return nil, "", err
			}
			n.items = it
		case "map":
			it, err := c.compile(t["values"], ns)
			if err != nil {
				return nil, "", err
			}
			n.items = it
		}
		return n, full, nil
	}
	return nil, "", fmt.Errorf("avro: bad schema node %v", t)
}

// appendTo appends the goavro native value v to builder b.
func (n *avroNode) appendTo(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch n.typ {
	case "union":
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return fmt.Errorf("union value %T", v)
		}
		for k, val := range m {
			if len(n.members) == 1 {
				return n.members[0].appendTo(b, val)
			}
			idx, ok := n.names[k]
			if !ok {
				return fmt.Errorf("union branch %q not in schema", k)
			}
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			for j, mem := range n.members {
				if j == idx {
					if err := mem.appendTo(sb.FieldBuilder(j), val); err != nil {
						return err
					}
				} else {
					sb.FieldBuilder(j).AppendNull()
				}
			}
		}
		return nil
	case "record":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("record value %T", v)
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, f := range n.fields {
			if err := f.node.appendTo(sb.FieldBuilder(i), m[f.name]); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		return nil
	case "array":
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("array value %T", v)
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for _, it := range items {
			if err := n.items.appendTo(lb.ValueBuilder(), it); err != nil {
				return err
			}
		}
		return nil
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("map value %T", v)
		}
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Go maps have no order; sorted keys keep output deterministic
		for _, k := range keys {
			mb.KeyBuilder().(*array.StringBuilder).Append(k)
			if err := n.items.appendTo(mb.ItemBuilder(), m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if x, ok := v.(int64); ok && n.logical == "local-timestamp-millis" {
		v = x * 1000 // the column is µs
	}
	return appendScalar(b, v, n.scale)
}

// appendScalar appends a goavro primitive or logical value to the matching builder.
func appendScalar(b array.Builder, v any, scale int32) error {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if x, ok := v.(bool); ok {
			b.Append(x)
			return nil
		}
	case *array.Int32Builder:
		if x, ok := v.(int32); ok {
			b.Append(x)
			return nil
		}
	case *array.Int64Builder:
		if x, ok := v.(int64); ok {
			b.Append(x)
			return nil
		}
	case *array.Float32Builder:
		if x, ok := v.(float32); ok {
			b.Append(x)
			return nil
		}
	case *array.Float64Builder:
		if x, ok := v.(float64); ok {
			b.Append(x)
			return nil
		}
	case *array.StringBuilder:
		switch x := v.(type) {
		case string:
			b.Append(x)
			return nil
		case []byte: // uuid on fixed(16)
			b.Append(fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]))
			return nil
		}
	case *array.BinaryBuilder:
		if x, ok := v.([]byte); ok {
			b.Append(x)
			return nil
		}
	case *array.FixedSizeBinaryBuilder:
		if x, ok := v.([]byte); ok {
			b.Append(x)
			return nil
		}
	case *array.Date32Builder:
		switch x := v.(type) {
		case time.Time:
			b.Append(arrow.Date32FromTime(x))
			return nil
		case int32:
			b.Append(arrow.Date32(x))
			return nil
		}
	case *array.Time32Builder:
		if x, ok := v.(time.Duration); ok {
			b.Append(arrow.Time32(x.Milliseconds()))
			return nil
		}
	case *array.Time64Builder:
		if x, ok := v.(time.Duration); ok {
			b.Append(arrow.Time64(x.Microseconds()))
			return nil
		}
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case time.Time:
			if unit == arrow.Nanosecond {
				b.Append(arrow.Timestamp(x.UnixNano()))
			} else {
				b.Append(arrow.Timestamp(x.UnixMicro()))
			}
			return nil
		case int64: // local-timestamp-* is not a goavro logical type: raw millis or micros
			b.Append(arrow.Timestamp(x))
			return nil
		}
	case *array.Decimal128Builder:
		if x, ok := v.(*big.Rat); ok {
			n, err := ratToInt(x, scale)
			if err != nil {
				return err
			}
			b.Append(decimal128.FromBigInt(n))
			return nil
		}
	case *array.Decimal256Builder:
		if x, ok := v.(*big.Rat); ok {
			n, err := ratToInt(x, scale)
			if err != nil {
				return err
			}
			b.Append(decimal256.FromBigInt(n))
			return nil
		}
	}
	return fmt.Errorf("cannot store Avro value %T in %s", v, b.Type())
}

func ratToInt(r *big.Rat, scale int32) (*big.Int, error) {
	m := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !m.IsInt() {
		return nil, fmt.Errorf("decimal %s has more than %d fraction digits", r.FloatString(int(scale)+2), scale)
	}
	return m.Num(), nil
}
