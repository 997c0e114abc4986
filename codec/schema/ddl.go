// Package schema turns the schema notations users already have into Arrow schemas: Spark SQL
// DDL strings, JSON Schema documents and Avro schemas (DESIGN.md §1: read-files and read-kafka
// take --schema / --value-schema). It also widens types for schema inference and applies
// schema hints (Databricks Auto Loader cloudFiles.schemaHints).
//
// Type mapping, shared by every notation:
//
//	boolean              -> Boolean
//	tinyint | byte       -> Int8
//	smallint | short     -> Int16
//	int | integer        -> Int32
//	bigint | long        -> Int64
//	float | real         -> Float32
//	double               -> Float64
//	decimal(p,s)         -> Decimal128(p,s) (p <= 38; decimal alone is decimal(10,0) as in Spark)
//	string | varchar(n) | char(n) -> Utf8 (length not enforced)
//	binary               -> Binary
//	date                 -> Date32 (days since 1970-01-01)
//	timestamp | timestamp_ltz -> Timestamp(µs, "UTC") (an instant)
//	timestamp_ntz        -> Timestamp(µs, "") (a wall-clock time without zone)
//	array<T>             -> List(T), elements nullable
//	map<K,V>             -> Map(K,V), keys not null, values nullable
//	struct<a:T, ...>     -> Struct
//
// Fields are nullable unless declared NOT NULL. A COMMENT is kept in the field metadata under
// the key "comment", as Spark does.
package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// SyntaxError reports a malformed DDL string. Pos is the 0-based byte offset of the offending
// token in Input; Error() prints the column (1-based) and a caret under the input.
type SyntaxError struct {
	Input string
	Pos   int
	Msg   string
}

func (e *SyntaxError) Error() string {
	snippet := e.Input
	pos := e.Pos
	// Keep the message readable for long inputs: show at most 60 bytes around the error.
	if len(snippet) > 60 {
		start := max(0, pos-30)
		end := min(len(snippet), start+60)
		snippet = snippet[start:end]
		pos -= start
	}
	return fmt.Sprintf("parse schema ddl: column %d: %s\n  %s\n  %s^", e.Pos+1, e.Msg, snippet, strings.Repeat(" ", pos))
}

// ParseDDL parses a Spark SQL DDL column list, e.g.
//
//	id long NOT NULL, amount decimal(10,2) COMMENT 'EUR', user struct<id:long, name:string>, `odd name` string
//
// into an Arrow schema (see the package doc for the type mapping). Keywords and type names are
// case-insensitive; column names keep their case. Names are identifiers ([A-Za-z0-9_]+) or
// backquoted (“ inside backquotes is a literal backquote). Struct members accept both
// "name:type" and "name type". Errors are *SyntaxError with the byte position.
// It follows Spark's StructType.fromDDL.
func ParseDDL(ddl string) (*arrow.Schema, error) {
	p := &ddlParser{s: ddl}
	fields, err := p.columns(false)
	if err != nil {
		return nil, err
	}
	if err := checkDuplicates(fields, p); err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// ParseType parses a single Spark SQL type such as "array<struct<a:int>>" or "decimal(10,2)".
func ParseType(s string) (arrow.DataType, error) {
	p := &ddlParser{s: s}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i < len(p.s) {
		return nil, p.errf("unexpected %q after type", p.rest())
	}
	return t, nil
}

type ddlParser struct {
	s string
	i int
	// dotted allows a.b.c column names (schema hints).
	dotted bool
}

func (p *ddlParser) errf(format string, args ...any) error {
	return &SyntaxError{Input: p.s, Pos: p.i, Msg: fmt.Sprintf(format, args...)}
}

func (p *ddlParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *ddlParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *ddlParser) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *ddlParser) expect(c byte) error {
	if p.peek() != c {
		if p.i >= len(p.s) {
			return p.errf("expected %q, found end of input", c)
		}
		return p.errf("expected %q, found %q", c, p.rest())
	}
	p.i++
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// name reads an identifier or a backquoted name.
func (p *ddlParser) name() (string, error) {
	p.ws()
	if p.i >= len(p.s) {
		return "", p.errf("expected a column name, found end of input")
	}
	if p.s[p.i] == '`' {
		start := p.i
		p.i++
		var b strings.Builder
		for {
			if p.i >= len(p.s) {
				p.i = start
				return "", p.errf("unterminated backquoted name")
			}
			c := p.s[p.i]
			p.i++
			if c == '`' {
				if p.i < len(p.s) && p.s[p.i] == '`' {
					b.WriteByte('`')
					p.i++
					continue
				}
				break
			}
			b.WriteByte(c)
		}
		if b.Len() == 0 {
			p.i = start
			return "", p.errf("empty column name")
		}
		return b.String(), nil
	}
	start := p.i
	for p.i < len(p.s) && isIdent(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return "", p.errf("expected a column name, found %q", p.rest())
	}
	return p.s[start:p.i], nil
}

// word reads a bare identifier (keyword or type name), lower-cased.
func (p *ddlParser) word() string {
	p.ws()
	start := p.i
	for p.i < len(p.s) && isIdent(p.s[p.i]) {
		p.i++
	}
	return strings.ToLower(p.s[start:p.i])
}

// keyword consumes kw (case-insensitive) if it is the next word.
func (p *ddlParser) keyword(kw string) bool {
	p.ws()
	save := p.i
	if p.word() == kw {
		return true
	}
	p.i = save
	return false
}

// columns parses "name type [NOT NULL] [COMMENT '...'] (, ...)*". In a struct body (inStruct)
// the list ends at '>' and "name:type" is allowed.
func (p *ddlParser) columns(inStruct bool) ([]arrow.Field, error) {
	var fields []arrow.Field
	for {
		if !inStruct && p.peek() == 0 && len(fields) == 0 {
			return nil, p.errf("empty schema")
		}
		if inStruct && p.peek() == '>' && len(fields) == 0 {
			return fields, nil // struct<>
		}
		f, err := p.column(inStruct)
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
		switch c := p.peek(); {
		case c == ',':
			p.i++
		case inStruct && c == '>':
			return fields, nil
		case !inStruct && c == 0:
			return fields, nil
		default:
			if inStruct {
				return nil, p.errf("expected ',' or '>', found %q", p.rest())
			}
			return nil, p.errf("expected ',' or end of input, found %q", p.rest())
		}
	}
}

func (p *ddlParser) column(inStruct bool) (arrow.Field, error) {
	namePos := p.peekPos()
	name, err := p.name()
	if err != nil {
		return arrow.Field{}, err
	}
	for p.dotted && p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		part, err := p.name()
		if err != nil {
			return arrow.Field{}, err
		}
		name += "\x00" + part // joined back by ParseHints
	}
	if inStruct && p.peek() == ':' {
		p.i++
	}
	if p.peek() == 0 || p.peek() == ',' {
		return arrow.Field{}, p.errf("expected a type for column %q", name)
	}
	t, err := p.typ()
	if err != nil {
		return arrow.Field{}, err
	}
	f := arrow.Field{Name: name, Type: t, Nullable: true}
	_ = namePos
	for {
		if p.keyword("not") {
			if !p.keyword("null") {
				return arrow.Field{}, p.errf("expected NULL after NOT")
			}
			f.Nullable = false
			continue
		}
		if p.keyword("comment") {
			c, err := p.quoted()
			if err != nil {
				return arrow.Field{}, err
			}
			f.Metadata = arrow.NewMetadata([]string{"comment"}, []string{c})
			continue
		}
		break
	}
	return f, nil
}

func (p *ddlParser) peekPos() int { p.ws(); return p.i }

// quoted reads a '...' or "..." string literal with backslash escapes.
func (p *ddlParser) quoted() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errf("expected a quoted comment")
	}
	start := p.i
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\' && p.i < len(p.s):
			b.WriteByte(p.s[p.i])
			p.i++
		case c == q:
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	p.i = start
	return "", p.errf("unterminated string literal")
}

func (p *ddlParser) intArg() (int, error) {
	p.ws()
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if start == p.i {
		return 0, p.errf("expected a number, found %q", p.rest())
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	if err != nil {
		p.i = start
		return 0, p.errf("bad number: %v", err)
	}
	return n, nil
}

func (p *ddlParser) typ() (arrow.DataType, error) {
	pos := p.peekPos()
	w := p.word()
	switch w {
	case "":
		if p.i >= len(p.s) {
			return nil, p.errf("expected a type, found end of input")
		}
		return nil, p.errf("expected a type, found %q", p.rest())
	case "boolean", "bool":
		return arrow.FixedWidthTypes.Boolean, nil
	case "tinyint", "byte":
		return arrow.PrimitiveTypes.Int8, nil
	case "smallint", "short":
		return arrow.PrimitiveTypes.Int16, nil
	case "int", "integer":
		return arrow.PrimitiveTypes.Int32, nil
	case "bigint", "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float", "real":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "varchar", "char":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		if _, err := p.intArg(); err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return arrow.BinaryTypes.String, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "timestamp", "timestamp_ltz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "timestamp_ntz":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "decimal", "dec", "numeric":
		prec, scale := 10, 0
		if p.peek() == '(' {
			p.i++
			var err error
			if prec, err = p.intArg(); err != nil {
				return nil, err
			}
			if p.peek() == ',' {
				p.i++
				if scale, err = p.intArg(); err != nil {
					return nil, err
				}
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
		}
		if prec < 1 || prec > 38 {
			p.i = pos
			return nil, p.errf("decimal precision %d out of range 1..38", prec)
		}
		if scale > prec {
			p.i = pos
			return nil, p.errf("decimal scale %d exceeds precision %d", scale, prec)
		}
		return &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}, nil
	case "array":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		elem, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return arrow.ListOf(elem), nil
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		k, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		v, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return arrow.MapOf(k, v), nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		fields, err := p.columns(true)
		if err != nil {
			return nil, err
		}
		if err := checkDuplicates(fields, p); err != nil {
			return nil, err
		}
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	}
	p.i = pos
	return nil, p.errf("unknown type %q", w)
}

func checkDuplicates(fields []arrow.Field, p *ddlParser) error {
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f.Name] {
			return &SyntaxError{Input: p.s, Pos: strings.Index(p.s, f.Name), Msg: fmt.Sprintf("duplicate column %q", f.Name)}
		}
		seen[f.Name] = true
	}
	return nil
}

// DDL formats s back as a Spark DDL string that ParseDDL accepts (round trip for the types in
// the package doc). Types outside that mapping print as their Arrow name.
func DDL(s *arrow.Schema) string {
	var b strings.Builder
	for i, f := range s.Fields() {
		if i > 0 {
			b.WriteString(", ")
		}
		writeField(&b, f, " ")
	}
	return b.String()
}

// QuoteName spells column name n in DDL: as it is when it is a plain identifier (letters,
// digits, _), else back-quoted with back-quotes doubled ("my col" → `my col`).
func QuoteName(n string) string {
	for i := 0; i < len(n); i++ {
		if !isIdent(n[i]) {
			return "`" + strings.ReplaceAll(n, "`", "``") + "`"
		}
	}
	if n == "" {
		return "``"
	}
	return n
}

func writeField(b *strings.Builder, f arrow.Field, sep string) {
	b.WriteString(QuoteName(f.Name))
	b.WriteString(sep)
	b.WriteString(TypeString(f.Type))
	if !f.Nullable {
		b.WriteString(" NOT NULL")
	}
	if i := f.Metadata.FindKey("comment"); i >= 0 {
		b.WriteString(" COMMENT '")
		b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(f.Metadata.Values()[i]))
		b.WriteString("'")
	}
}

// TypeString returns the Spark DDL spelling of t ("bigint", "array<string>", ...; a
// dictionary-encoded column its values' type), or Arrow's name of a type Spark has no name
// for ("uint32").
func TypeString(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.Int8Type:
		return "tinyint"
	case *arrow.Int16Type:
		return "smallint"
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "bigint"
	case *arrow.Float32Type:
		return "float"
	case *arrow.Float64Type:
		return "double"
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "string"
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.FixedSizeBinaryType:
		return "binary"
	case *arrow.Date32Type, *arrow.Date64Type:
		return "date"
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return "timestamp_ntz"
		}
		return "timestamp"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *arrow.ListType:
		return "array<" + TypeString(t.Elem()) + ">"
	case *arrow.LargeListType:
		return "array<" + TypeString(t.Elem()) + ">"
	case *arrow.MapType:
		return "map<" + TypeString(t.KeyType()) + "," + TypeString(t.ItemType()) + ">"
	case *arrow.DictionaryType:
		return TypeString(t.ValueType) // Spark reads a dictionary-encoded column as its values' type
	case *arrow.StructType:
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range t.Fields() {
			if i > 0 {
				b.WriteString(",")
			}
			writeField(&b, f, ":")
		}
		b.WriteString(">")
		return b.String()
	}
	return t.String()
}
