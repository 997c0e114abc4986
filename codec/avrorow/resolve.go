package avrorow

import (
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Resolver turns a goavro native value decoded with a writer schema into the native value of
// the reader schema it was compiled for (see Resolve).
type Resolver func(v any) (any, error)

// Resolve compiles the Avro specification's schema resolution ("Schema Resolution", Avro
// 1.11) of data written with w into reader schema r:
//
//   - records: fields matched by name (or a reader field's alias); writer fields the reader
//     lacks are dropped; reader fields the writer lacks take their default (no default: error);
//     records, enums and fixed must have the same unqualified name (or a reader alias);
//   - enums: a writer symbol the reader lacks becomes the reader's enum default (none: the
//     value fails to resolve);
//   - arrays and maps resolve their items; fixed must have the same size;
//   - promotions int→long|float|double, long→float|double, float→double, string↔bytes;
//   - unions: a writer union resolves the branch of each value; a reader union takes the
//     first branch that matches the writer's schema.
//
// Incompatible schemas are an error here; values that fail only at run time (an enum symbol
// without a reader default, a writer union branch the reader cannot take) fail in the
// returned Resolver.
func Resolve(w, r *Node) (Resolver, error) {
	return resolve(w, r, "$")
}

func identity(v any) (any, error) { return v, nil }

func unqualified(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

func sameName(w, r *Node) bool {
	if unqualified(w.Name) == unqualified(r.Name) {
		return true
	}
	for _, a := range r.Aliases {
		if a == w.Name || unqualified(a) == unqualified(w.Name) {
			return true
		}
	}
	return false
}

// promotion returns the conversion of a writer primitive value to the reader primitive, or nil
// when the types do not match.
func promotion(w, r string) Resolver {
	if w == r {
		return identity
	}
	switch w + ">" + r {
	case "int>long":
		return func(v any) (any, error) { return int64(v.(int32)), nil }
	case "int>float":
		return func(v any) (any, error) { return float32(v.(int32)), nil }
	case "int>double":
		return func(v any) (any, error) { return float64(v.(int32)), nil }
	case "long>float":
		return func(v any) (any, error) { return float32(v.(int64)), nil }
	case "long>double":
		return func(v any) (any, error) { return float64(v.(int64)), nil }
	case "float>double":
		return func(v any) (any, error) { return float64(v.(float32)), nil }
	case "string>bytes":
		return func(v any) (any, error) { return []byte(v.(string)), nil }
	case "bytes>string":
		return func(v any) (any, error) { return string(v.([]byte)), nil }
	}
	return nil
}

// matches reports whether writer schema w can be resolved to reader schema r (for picking a
// reader union branch).
func matches(w, r *Node) bool {
	if w.Type != r.Type {
		return promotion(w.Type, r.Type) != nil && isPrimitive(w.Type) && isPrimitive(r.Type)
	}
	switch w.Type {
	case "record", "enum", "fixed":
		return sameName(w, r)
	}
	return true
}

func isPrimitive(t string) bool {
	switch t {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string":
		return true
	}
	return false
}

func resolve(w, r *Node, path string) (Resolver, error) {
	if w.Type == "union" {
		return resolveWriterUnion(w, r, path)
	}
	if r.Type == "union" {
		if w.Type == "null" {
			if !r.Null {
				return nil, fmt.Errorf("%s: writer null, reader union has no null branch", path)
			}
			return identity, nil
		}
		for i, m := range r.Members {
			if matches(w, m) {
				inner, err := resolve(w, m, path)
				if err != nil {
					return nil, err
				}
				key := r.Keys[i]
				return func(v any) (any, error) {
					x, err := inner(v)
					if err != nil || x == nil {
						return x, err
					}
					return map[string]any{key: x}, nil
				}, nil
			}
		}
		return nil, fmt.Errorf("%s: writer %s matches no branch of the reader union", path, describe(w))
	}
	if w.Type != r.Type {
		if p := promotion(w.Type, r.Type); p != nil && isPrimitive(w.Type) && isPrimitive(r.Type) {
			if w.Logical != r.Logical {
				return nil, fmt.Errorf("%s: writer %s cannot be read as %s", path, describe(w), describe(r))
			}
			return p, nil
		}
		return nil, fmt.Errorf("%s: writer %s cannot be read as %s", path, describe(w), describe(r))
	}
	switch w.Type {
	case "record":
		return resolveRecord(w, r, path)
	case "enum":
		if !sameName(w, r) {
			return nil, fmt.Errorf("%s: writer enum %s, reader enum %s", path, w.Name, r.Name)
		}
		have := map[string]bool{}
		for _, s := range r.Symbols {
			have[s] = true
		}
		def := r.EnumDefault
		return func(v any) (any, error) {
			s, _ := v.(string)
			if have[s] {
				return s, nil
			}
			if def != "" {
				return def, nil
			}
			return nil, fmt.Errorf("%s: enum symbol %q is not in the reader's %s and it has no default", path, s, r.Name)
		}, nil
	case "fixed":
		if !sameName(w, r) || w.Size != r.Size {
			return nil, fmt.Errorf("%s: writer fixed %s(%d), reader fixed %s(%d)", path, w.Name, w.Size, r.Name, r.Size)
		}
		return identity, nil
	case "array":
		it, err := resolve(w.Items, r.Items, path+"[]")
		if err != nil {
			return nil, err
		}
		return func(v any) (any, error) {
			l, _ := v.([]any)
			out := make([]any, len(l))
			for i, x := range l {
				y, err := it(x)
				if err != nil {
					return nil, err
				}
				out[i] = y
			}
			return out, nil
		}, nil
	case "map":
		it, err := resolve(w.Items, r.Items, path+"{}")
		if err != nil {
			return nil, err
		}
		return func(v any) (any, error) {
			m, _ := v.(map[string]any)
			out := make(map[string]any, len(m))
			for k, x := range m {
				y, err := it(x)
				if err != nil {
					return nil, err
				}
				out[k] = y
			}
			return out, nil
		}, nil
	}
	if w.Logical != r.Logical && (w.Logical != "" && r.Logical != "") {
		return nil, fmt.Errorf("%s: writer %s cannot be read as %s", path, describe(w), describe(r))
	}
	if w.Logical != r.Logical && (goavroNative(w) || goavroNative(r)) {
		// A logical type on one side only: the value is the underlying type's, converted
		// from the writer's native form (time.Time, *big.Rat...) to the reader's.
		return func(v any) (any, error) { return logicalValue(r, rawValue(w, v)), nil }, nil
	}
	return identity, nil
}

// goavroNative reports whether goavro decodes n's values to a logical native form
// (time.Time, time.Duration, *big.Rat) rather than its underlying type's.
func goavroNative(n *Node) bool {
	return goavroLogical[n.Type+"."+n.Logical] || n.Type == "fixed" && n.Logical == "decimal"
}

// rawValue turns goavro's native value of logical type n.Logical back into the value of the
// underlying type (the inverse of logicalValue).
func rawValue(n *Node, v any) any {
	switch x := v.(type) {
	case time.Time:
		switch n.Logical {
		case "date":
			return int32(x.Unix() / 86400)
		case "timestamp-millis":
			return x.Unix()*1e3 + int64(x.Nanosecond()/1e6)
		case "timestamp-micros":
			return x.Unix()*1e6 + int64(x.Nanosecond()/1e3)
		}
	case time.Duration:
		if n.Logical == "time-millis" {
			return int32(x / time.Millisecond)
		}
		return int64(x / time.Microsecond)
	case *big.Rat:
		u, err := ratToInt(x, n.Scale)
		if err != nil {
			return v
		}
		size := len(u.Bytes()) + 1
		if n.Type == "fixed" {
			size = n.Size
		}
		if u.Sign() < 0 {
			u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
		}
		return u.FillBytes(make([]byte, size))
	}
	return v
}

// logicalValue turns a value of the underlying type into goavro's native value of logical
// type n.Logical (goavro's own conversions, logical_type.go).
func logicalValue(n *Node, v any) any {
	switch x := v.(type) {
	case []byte:
		if n.Logical == "decimal" {
			return new(big.Rat).SetFrac(twosComplement(x), pow10(n.Scale))
		}
	case int32:
		switch n.Logical {
		case "date":
			return time.Unix(int64(x)*86400, 0).UTC()
		case "time-millis":
			return time.Duration(x) * time.Millisecond
		}
	case int64:
		switch n.Logical {
		case "timestamp-millis":
			return time.Unix(x/1e3, x%1e3*1e6).UTC()
		case "timestamp-micros":
			return time.Unix(x/1e6, x%1e6*1e3).UTC()
		case "time-micros":
			return time.Duration(x) * time.Microsecond
		}
	}
	return v
}

func describe(n *Node) string {
	s := n.Type
	if n.Name != "" {
		s += " " + n.Name
	}
	if n.Logical != "" {
		s += " (" + n.Logical + ")"
	}
	return s
}

func resolveWriterUnion(w, r *Node, path string) (Resolver, error) {
	// Each writer branch resolves on its own; incompatible branches fail only when a value
	// uses them.
	branches := map[string]Resolver{}
	bad := map[string]error{}
	for i, m := range w.Members {
		res, err := resolve(m, r, path)
		if err != nil {
			bad[w.Keys[i]] = err
			continue
		}
		branches[w.Keys[i]] = res
	}
	nullOK := r.Type == "null" || (r.Type == "union" && r.Null)
	return func(v any) (any, error) {
		if v == nil {
			if !nullOK {
				return nil, fmt.Errorf("%s: null written, the reader's %s has no null", path, describe(r))
			}
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("%s: union value %T", path, v)
		}
		for k, x := range m {
			if res := branches[k]; res != nil {
				return res(x)
			}
			if err := bad[k]; err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s: union branch %q not in the writer schema", path, k)
		}
		return nil, nil
	}, nil
}

func resolveRecord(w, r *Node, path string) (Resolver, error) {
	if !sameName(w, r) {
		return nil, fmt.Errorf("%s: writer record %s, reader record %s", path, w.Name, r.Name)
	}
	type step struct {
		from string // writer field name, "" for a default
		res  Resolver
		def  any
	}
	wf := map[string]*Field{}
	for i := range w.Fields {
		wf[w.Fields[i].Name] = &w.Fields[i]
	}
	steps := make([]step, len(r.Fields))
	for i, f := range r.Fields {
		src := wf[f.Name]
		for _, a := range f.Aliases {
			if src == nil {
				src = wf[a]
			}
		}
		if src != nil {
			res, err := resolve(src.Node, f.Node, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			steps[i] = step{from: src.Name, res: res}
			continue
		}
		if !f.HasDefault {
			return nil, fmt.Errorf("%s.%s: the reader's field is not in the writer schema and has no default", path, f.Name)
		}
		def, err := DefaultValue(f.Node, f.Default)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: default: %w", path, f.Name, err)
		}
		steps[i] = step{def: def}
	}
	return func(v any) (any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: record value %T", path, v)
		}
		out := make(map[string]any, len(steps))
		for i, s := range steps {
			if s.from == "" {
				out[r.Fields[i].Name] = s.def
				continue
			}
			x, err := s.res(m[s.from])
			if err != nil {
				return nil, err
			}
			out[r.Fields[i].Name] = x
		}
		return out, nil
	}, nil
}

// DefaultValue converts a field's JSON default (json.Unmarshal form) into the goavro native
// value of its schema n, following the specification's table of default values (bytes and
// fixed as strings of code points 0-255; a union's default belongs to its first branch).
func DefaultValue(n *Node, j any) (any, error) {
	if n.Type == "union" {
		if n.NullFirst || len(n.Members) == 0 {
			if j != nil {
				return nil, fmt.Errorf("the default of a union whose first branch is null must be null")
			}
			return nil, nil
		}
		v, err := DefaultValue(n.Members[0], j)
		if err != nil {
			return nil, err
		}
		return map[string]any{n.Keys[0]: v}, nil
	}
	bad := func() (any, error) { return nil, fmt.Errorf("%v is not a %s", j, describe(n)) }
	switch n.Type {
	case "null":
		return nil, nil
	case "boolean":
		if b, ok := j.(bool); ok {
			return b, nil
		}
	case "int", "long":
		f, ok := j.(float64)
		if !ok || f != float64(int64(f)) {
			return bad()
		}
		switch {
		case n.Logical == "date" && n.Type == "int":
			return time.Unix(int64(f)*86400, 0).UTC(), nil
		case n.Logical == "timestamp-millis":
			return time.UnixMilli(int64(f)).UTC(), nil
		case n.Logical == "timestamp-micros":
			return time.UnixMicro(int64(f)).UTC(), nil
		case n.Type == "int":
			return int32(f), nil
		}
		return int64(f), nil
	case "float":
		if f, ok := j.(float64); ok {
			return float32(f), nil
		}
	case "double":
		if f, ok := j.(float64); ok {
			return f, nil
		}
	case "string", "enum":
		if s, ok := j.(string); ok {
			return s, nil
		}
	case "bytes", "fixed":
		s, ok := j.(string)
		if !ok {
			return bad()
		}
		b := make([]byte, 0, len(s))
		for _, c := range s {
			if c > 255 {
				return bad()
			}
			b = append(b, byte(c))
		}
		if n.Logical == "decimal" {
			return new(big.Rat).SetFrac(twosComplement(b), pow10(n.Scale)), nil
		}
		return b, nil
	case "array":
		l, ok := j.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(l))
		for i, x := range l {
			v, err := DefaultValue(n.Items, x)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case "map", "record":
		m, ok := j.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		if n.Type == "map" {
			for k, x := range m {
				v, err := DefaultValue(n.Items, x)
				if err != nil {
					return nil, err
				}
				out[k] = v
			}
			return out, nil
		}
		for _, f := range n.Fields {
			x, has := m[f.Name]
			if !has {
				if !f.HasDefault {
					return nil, fmt.Errorf("record default lacks field %s", f.Name)
				}
				x = f.Default
			}
			v, err := DefaultValue(f.Node, x)
			if err != nil {
				return nil, err
			}
			out[f.Name] = v
		}
		return out, nil
	}
	return bad()
}
