package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Load reads a schema given on the command line (--schema, --value-schema, --key-schema):
//
//   - "@path": the file's content, detected as below;
//   - text starting with '{' or '[': a JSON document, detected by its shape:
//     an Avro schema ("type": "record", or a union array), a Spark StructType JSON
//     ("type": "struct" with "fields", as printed by df.schema.json()), or else a JSON Schema
//     ("properties", "$schema" or "type": "object");
//   - anything else: a Spark DDL column list (ParseDDL) or, when it is not valid DDL and names
//     an existing regular file, that file (orders.json = @orders.json). Valid DDL is never read
//     as a path, even if a file of that name exists: "@" forces a file.
//
// Errors name the file and the notation tried; text that is neither DDL nor an existing file
// but looks like a path (no spaces, a '/' or an extension) is reported as a missing file.
func Load(spec string) (*arrow.Schema, error) {
	if strings.HasPrefix(spec, "@") {
		return loadFile(spec[1:])
	}
	s, err := Parse([]byte(spec))
	if err == nil || Detect([]byte(spec)) != NotationDDL {
		return s, err
	}
	fi, serr := os.Stat(spec)
	if serr == nil && fi.Mode().IsRegular() {
		return loadFile(spec)
	}
	if looksLikePath(spec) {
		if serr == nil {
			serr = fmt.Errorf("not a regular file")
		}
		return nil, fmt.Errorf("load schema: %s is not a readable schema file (%v), nor a DDL column list (%w)", spec, serr, err)
	}
	return nil, err
}

// loadFile reads and parses the schema file at path.
func loadFile(path string) (*arrow.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load schema %s: %w", path, err)
	}
	return s, nil
}

// looksLikePath tells whether invalid DDL was more likely meant as a file path: one word
// with a '/' or a file extension (orders.json, schemas/order).
func looksLikePath(spec string) bool {
	if strings.ContainsAny(spec, " \t\n,<>()") {
		return false
	}
	return strings.ContainsRune(spec, '/') || filepath.Ext(spec) != ""
}

// Notation is the schema language Detect recognised.
type Notation string

// The notations Parse understands.
const (
	NotationDDL        Notation = "ddl"
	NotationJSONSchema Notation = "json-schema"
	NotationAvro       Notation = "avro"
	NotationSparkJSON  Notation = "spark-json"
)

// Detect tells which notation data is written in (see Load).
func Detect(data []byte) Notation {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return NotationDDL
	}
	if t[0] == '[' {
		return NotationAvro
	}
	n, err := parseDoc(t)
	if err != nil {
		return NotationJSONSchema // let the JSON Schema parser report the syntax error
	}
	switch n.getStr("type") {
	case "record", "error":
		return NotationAvro
	case "struct":
		if n.get("fields") != nil {
			return NotationSparkJSON
		}
	}
	if n.get("properties") == nil && n.get("$schema") == nil && n.get("fields") != nil {
		return NotationAvro
	}
	return NotationJSONSchema
}

// Parse converts a schema document in any notation Detect recognises.
func Parse(data []byte) (*arrow.Schema, error) {
	switch Detect(data) {
	case NotationAvro:
		return FromAvro(data)
	case NotationSparkJSON:
		return FromSparkJSON(data)
	case NotationJSONSchema:
		return FromJSONSchema(data)
	}
	return ParseDDL(string(data))
}

// FromSparkJSON converts Spark's JSON form of a StructType (DataType.json():
// {"type":"struct","fields":[{"name":..,"type":..,"nullable":..,"metadata":{..}}]}) into an
// Arrow schema. Type names are those of ParseType; "comment" metadata is kept.
func FromSparkJSON(data []byte) (*arrow.Schema, error) {
	n, err := parseDoc(data)
	if err != nil {
		return nil, fmt.Errorf("parse spark schema json: %w", err)
	}
	t, err := sparkType(n, "$")
	if err != nil {
		return nil, err
	}
	st, ok := t.(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("parse spark schema json: the root must be a struct")
	}
	return arrow.NewSchema(st.Fields(), nil), nil
}

func sparkType(n *node, path string) (arrow.DataType, error) {
	if n.kind == 's' {
		t, err := ParseType(n.str)
		if err != nil {
			return nil, fmt.Errorf("parse spark schema json at %s: %w", path, err)
		}
		return t, nil
	}
	boolOr := func(key string, def bool) bool {
		if v := n.get(key); v != nil && v.kind == 'b' {
			return v.b
		}
		return def
	}
	sub := func(key string) (arrow.DataType, error) {
		v := n.get(key)
		if v == nil {
			return nil, fmt.Errorf("parse spark schema json at %s: missing %q", path, key)
		}
		return sparkType(v, path+"."+key)
	}
	switch n.getStr("type") {
	case "struct":
		fs := n.get("fields")
		if fs == nil || fs.kind != 'a' {
			return nil, fmt.Errorf("parse spark schema json at %s: struct without fields", path)
		}
		fields := make([]arrow.Field, 0, len(fs.vals))
		for _, f := range fs.vals {
			name := f.getStr("name")
			ft := f.get("type")
			if name == "" || ft == nil {
				return nil, fmt.Errorf("parse spark schema json at %s: field needs a name and a type", path)
			}
			t, err := sparkType(ft, path+"."+name)
			if err != nil {
				return nil, err
			}
			af := arrow.Field{Name: name, Type: t, Nullable: true}
			if v := f.get("nullable"); v != nil && v.kind == 'b' {
				af.Nullable = v.b
			}
			if c := f.get("metadata").getStr("comment"); c != "" {
				af.Metadata = arrow.NewMetadata([]string{"comment"}, []string{c})
			}
			fields = append(fields, af)
		}
		return arrow.StructOf(fields...), nil
	case "array":
		et, err := sub("elementType")
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "item", Type: et, Nullable: boolOr("containsNull", true)}), nil
	case "map":
		kt, err := sub("keyType")
		if err != nil {
			return nil, err
		}
		vt, err := sub("valueType")
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(kt, vt)
		m.SetItemNullable(boolOr("valueContainsNull", true))
		return m, nil
	}
	return nil, fmt.Errorf("parse spark schema json at %s: unknown type %q", path, n.getStr("type"))
}
