package textout

import "bytes"

// AppendCSVField appends one CSV field (RFC 4180, comma-separated) to dst as Spark's CSV
// writer writes it: a null value as nullValue (Spark's nullValue option, default "": nothing),
// the empty string as "" (Spark's emptyValue), so that a reader tells the two apart
// (codec/csvrow: only an unquoted field equal to its null value is null). A field is quoted
// when it is empty, contains a comma, a quote, CR or LF, starts or ends with a space or a
// tab, or equals a non-empty nullValue; quotes inside are doubled.
func AppendCSVField(dst, field []byte, null bool, nullValue string) []byte {
	if null {
		return append(dst, nullValue...)
	}
	if !csvNeedsQuotes(field, nullValue) {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	for {
		i := bytes.IndexByte(field, '"')
		if i < 0 {
			break
		}
		dst = append(dst, field[:i+1]...)
		dst = append(dst, '"')
		field = field[i+1:]
	}
	dst = append(dst, field...)
	return append(dst, '"')
}

func csvNeedsQuotes(f []byte, nullValue string) bool {
	if len(f) == 0 || nullValue != "" && string(f) == nullValue {
		return true
	}
	if c := f[0]; c == ' ' || c == '\t' {
		return true
	}
	if c := f[len(f)-1]; c == ' ' || c == '\t' {
		return true
	}
	return bytes.ContainsAny(f, ",\"\r\n")
}
