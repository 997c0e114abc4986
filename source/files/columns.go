package files

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/expr"
	"github.com/streamkit/streamkit/stage"
)

// project narrows the stream schema that resolveSchema set (the checkpoint's, whole) to
// Config.Columns, in their order, plus _rescued_data (and _metadata). The other columns are
// read past: text decoders skip them (csvrow/jsonrow Options.Skip), so their values are
// neither decoded nor rescued and never make a record bad; binary formats read only the
// selected columns (Parquet only their column chunks), as with --schema. Fields that no
// column of the schema names are rescued from text as before. Errors are usage errors naming
// the unknown column with the closest one.
func (s *Source) project() error {
	if len(s.cfg.Columns) == 0 {
		return nil
	}
	data := s.dec.Fields()[:s.dec.NumFields()-1] // without _rescued_data
	names := make([]string, len(data))
	for i, f := range data {
		names[i] = f.Name
	}
	var fields []arrow.Field
	for _, c := range s.cfg.Columns {
		switch i := slices.Index(names, c); {
		case c == rescue.Column || c == MetadataColumn:
			return stage.Usagef("read-files: --columns: %s is always kept, as the last columns; leave it out of --columns", c)
		case i < 0:
			return stage.Usagef("read-files: --columns: no column `%s` in the stream schema%s", c, expr.DidYouMean(c, names))
		case slices.ContainsFunc(fields, func(f arrow.Field) bool { return f.Name == c }):
			return stage.Usagef("read-files: --columns: %s is given twice", c)
		default:
			fields = append(fields, data[i])
		}
	}
	s.skip, s.positions = nil, names
	for _, n := range names {
		if !slices.Contains(s.cfg.Columns, n) {
			s.skip = append(s.skip, n)
		}
	}
	fields = append(fields, s.out.Fields()[len(data):]...) // _rescued_data (+ _metadata)
	md := s.out.Metadata()
	s.setSchema(arrow.NewSchema(fields, &md))
	s.projecting = true
	return nil
}
