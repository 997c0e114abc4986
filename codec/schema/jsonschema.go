package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// FromJSONSchema converts a JSON Schema document (draft 4 to 2020-12; the subset that describes
// record shapes) whose root is an object schema into an Arrow schema, one column per property in
// document order.
//
// Mapping:
//
//	"type": "object" with "properties"          -> Struct (the root: the schema's columns)
//	"type": "object" with only "additionalProperties": S -> Map(Utf8, S)
//	"type": "object" with neither               -> Utf8 (the raw JSON text of the value)
//	"type": "array", "items": S                 -> List(S); without items List(Utf8)
//	"type": "string"                            -> Utf8; "format": "date-time" -> Timestamp(µs,"UTC"),
//	                                               "date" -> Date32, "time" -> Time64(µs),
//	                                               "contentEncoding": "base64" or "format": "byte" -> Binary
//	"type": "integer"                           -> Int64
//	"type": "number"                            -> Float64
//	"type": "boolean"                           -> Boolean
//	"enum" / "const" without type               -> Utf8 (Int64 if every value is an integer)
//
// Nullability: a property is NOT NULL only when it is listed in "required" and its type does not
// admit null. Null is admitted by a type array containing "null" (["string","null"]), by
// "nullable": true (OpenAPI 3.0), or by "anyOf"/"oneOf" with a {"type":"null"} branch. A type
// array, anyOf or oneOf with two or more non-null types becomes Utf8 (the decoders store any
// JSON value's text in a string column). Local "$ref"s ("#/definitions/x", "#/$defs/x") are
// resolved; recursive references are an error, since Arrow types cannot be recursive.
func FromJSONSchema(doc []byte) (*arrow.Schema, error) {
	root, err := parseDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("parse json schema: %w", err)
	}
	c := &jsConv{root: root, active: map[string]bool{}}
	r, err := c.resolve(root, "#")
	if err != nil {
		return nil, err
	}
	if r.get("properties") == nil {
		return nil, fmt.Errorf("parse json schema: the root must be an object schema with \"properties\"")
	}
	st, err := c.object(r, "#")
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(st.(*arrow.StructType).Fields(), nil), nil
}

type jsConv struct {
	root   *node
	active map[string]bool // $refs being expanded (recursion guard)
}

func (c *jsConv) errf(path, format string, args ...any) error {
	return fmt.Errorf("parse json schema at %s: %s", path, fmt.Sprintf(format, args...))
}

// resolve follows a local $ref (repeatedly).
func (c *jsConv) resolve(n *node, path string) (*node, error) {
	for i := 0; n != nil && n.kind == 'o'; i++ {
		ref := n.getStr("$ref")
		if ref == "" {
			return n, nil
		}
		if i > 32 {
			return nil, c.errf(path, "$ref chain too long")
		}
		if !strings.HasPrefix(ref, "#") {
			return nil, c.errf(path, "only local $ref (#/...) is supported, got %q", ref)
		}
		t := c.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
			if part == "" {
				continue
			}
			part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
			t = t.get(part)
			if t == nil {
				return nil, c.errf(path, "unresolved $ref %q", ref)
			}
		}
		n = t
	}
	return n, nil
}

// typ converts a schema node into an Arrow type and whether it admits null.
func (c *jsConv) typ(n *node, path string) (arrow.DataType, bool, error) {
	if n == nil {
		return arrow.BinaryTypes.String, true, nil
	}
	if n.kind == 'b' { // true / false schemas
		return arrow.BinaryTypes.String, true, nil
	}
	if n.kind != 'o' {
		return nil, false, c.errf(path, "schema must be an object")
	}
	if ref := n.getStr("$ref"); ref != "" {
		if c.active[ref] {
			return nil, false, c.errf(path, "recursive $ref %q cannot map to an Arrow type", ref)
		}
		c.active[ref] = true
		defer delete(c.active, ref)
		r, err := c.resolve(n, path)
		if err != nil {
			return nil, false, err
		}
		return c.typ(r, path)
	}
	nullable := false
	if v := n.get("nullable"); v != nil && v.kind == 'b' && v.b {
		nullable = true
	}
	// anyOf / oneOf: [X, {"type":"null"}] -> nullable X.
	for _, key := range []string{"anyOf", "oneOf"} {
		alts := n.get(key)
		if alts == nil || alts.kind != 'a' {
			continue
		}
		var nonNull []*node
		for _, a := range alts.vals {
			if r, err := c.resolve(a, path); err == nil && r.getStr("type") == "null" {
				nullable = true
				continue
			}
			nonNull = append(nonNull, a)
		}
		if len(nonNull) == 1 {
			t, nl, err := c.typ(nonNull[0], path+"/"+key)
			return t, nl || nullable, err
		}
		return arrow.BinaryTypes.String, true, nil
	}
	var types []string
	switch tv := n.get("type"); {
	case tv == nil:
	case tv.kind == 's':
		types = []string{tv.str}
	case tv.kind == 'a':
		for _, e := range tv.vals {
			if e.kind == 's' {
				if e.str == "null" {
					nullable = true
				} else {
					types = append(types, e.str)
				}
			}
		}
	}
	if len(types) == 0 {
		switch {
		case n.get("properties") != nil:
			types = []string{"object"}
		case n.get("items") != nil:
			types = []string{"array"}
		case n.get("enum") != nil || n.get("const") != nil:
			vals := []*node{n.get("const")}
			if e := n.get("enum"); e != nil && e.kind == 'a' {
				vals = e.vals
			}
			allInt := len(vals) > 0
			for _, v := range vals {
				if v == nil || v.kind != 'n' {
					allInt = false
					continue
				}
				if _, err := v.num.Int64(); err != nil {
					allInt = false
				}
			}
			if allInt {
				return arrow.PrimitiveTypes.Int64, nullable, nil
			}
			return arrow.BinaryTypes.String, nullable, nil
		default:
			return arrow.BinaryTypes.String, true, nil
		}
	}
	if len(types) > 1 {
		// ["integer","number"] is a number; anything else mixed is kept as text.
		if len(types) == 2 && (types[0] == "integer" && types[1] == "number" || types[0] == "number" && types[1] == "integer") {
			return arrow.PrimitiveTypes.Float64, nullable, nil
		}
		return arrow.BinaryTypes.String, nullable, nil
	}
	switch types[0] {
	case "null":
		return arrow.BinaryTypes.String, true, nil
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nullable, nil
	case "integer":
		return arrow.PrimitiveTypes.Int64, nullable, nil
	case "number":
		return arrow.PrimitiveTypes.Float64, nullable, nil
	case "string":
		switch n.getStr("format") {
		case "date-time":
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nullable, nil
		case "date":
			return arrow.FixedWidthTypes.Date32, nullable, nil
		case "time":
			return arrow.FixedWidthTypes.Time64us, nullable, nil
		case "byte", "binary":
			return arrow.BinaryTypes.Binary, nullable, nil
		}
		if n.getStr("contentEncoding") == "base64" {
			return arrow.BinaryTypes.Binary, nullable, nil
		}
		return arrow.BinaryTypes.String, nullable, nil
	case "array":
		items := n.get("items")
		if items != nil && items.kind == 'a' { // draft-4 tuple form
			return arrow.ListOf(arrow.BinaryTypes.String), nullable, nil
		}
		et, _, err := c.typ(items, path+"/items")
		if err != nil {
			return nil, false, err
		}
		return arrow.ListOf(et), nullable, nil
	case "object":
		t, err := c.object(n, path)
		return t, nullable, err
	}
	return nil, false, c.errf(path, "unknown type %q", types[0])
}

func (c *jsConv) object(n *node, path string) (arrow.DataType, error) {
	props := n.get("properties")
	if props == nil || props.kind != 'o' {
		if ap := n.get("additionalProperties"); ap != nil && ap.kind == 'o' {
			vt, _, err := c.typ(ap, path+"/additionalProperties")
			if err != nil {
				return nil, err
			}
			return arrow.MapOf(arrow.BinaryTypes.String, vt), nil
		}
		return arrow.BinaryTypes.String, nil
	}
	required := map[string]bool{}
	if r := n.get("required"); r != nil && r.kind == 'a' {
		for _, e := range r.vals {
			if e.kind == 's' {
				required[e.str] = true
			}
		}
	}
	fields := make([]arrow.Field, 0, len(props.keys))
	for i, name := range props.keys {
		t, nullable, err := c.typ(props.vals[i], path+"/properties/"+name)
		if err != nil {
			return nil, err
		}
		f := arrow.Field{Name: name, Type: t, Nullable: nullable || !required[name]}
		if d := props.vals[i].getStr("description"); d != "" {
			f.Metadata = arrow.NewMetadata([]string{"comment"}, []string{d})
		}
		fields = append(fields, f)
	}
	return arrow.StructOf(fields...), nil
}
