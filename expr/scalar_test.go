package expr

import "testing"

// all is the case of an expression whose value is v of type typ in each of smokeBatch's 4 rows.
func all(src, typ, v string) evalCase { return evalCase{src, typ + ":" + v + "," + v + "," + v + "," + v} }

// Values printed by pyspark 4.1 (spark.sql.ansi.enabled=true, session time zone UTC) for
// the same expressions: the hash functions must equal Spark's bit for bit.
func TestScalarSparkVectors(t *testing.T) {
	rec := smokeBatch(t)
	defer rec.Release()
	checkValues(t, rec, []evalCase{
		all("hash(1)", "int", "-559580957"),
		all("hash(1, 2)", "int", "-222940379"),
		all("hash(NULL)", "int", "42"),
		all("hash(CAST(NULL AS INT), 1)", "int", "-559580957"),
		all("hash(1L)", "int", "-1712319331"),
		all("hash('abc')", "int", "1322437556"),
		all("hash('')", "int", "142593372"),
		all("hash('a')", "int", "1485273170"),
		all("hash('ab')", "int", "-97053317"),
		all("hash('abcde')", "int", "814637928"),
		all("hash('ünï')", "int", "750688415"),
		all("hash(true)", "int", "-559580957"),
		all("hash(false)", "int", "933211791"),
		all("hash(0.0D)", "int", "-1670924195"),
		all("hash(-0.0D)", "int", "-1670924195"),
		all("hash(CAST('NaN' AS DOUBLE))", "int", "-1281358385"),
		all("hash(1.5D)", "int", "1290763749"),
		all("hash(1.25)", "int", "1910520950"),
		all("hash(CAST(1.25 AS DECIMAL(20,2)))", "int", "-1153375511"),
		all("hash(CAST(-1.25 AS DECIMAL(38,2)))", "int", "-342901333"),
		all("hash(CAST(12345678901234567890.12 AS DECIMAL(38,2)))", "int", "-2030013727"),
		all("hash(CAST(-12345678901234567890.12 AS DECIMAL(38,2)))", "int", "333635401"),
		all("xxhash64(CAST(12345678901234567890.12 AS DECIMAL(38,2)))", "bigint", "4252983850546716758"),
		all("hash(1.5D, 'a', NULL, 2L)", "int", "508417956"),
		all("hash(DATE '2024-02-29')", "int", "653915859"),
		all("hash(TIMESTAMP '2020-06-01 12:34:56.789')", "int", "-1555523416"),
		all("hash(X'0102')", "int", "1964783052"),
		all("hash(INTERVAL '1' HOUR)", "int", "2138128218"),
		all("xxhash64(1)", "bigint", "-6698625589789238999"),
		all("xxhash64(1, 2)", "bigint", "-8133857028838179022"),
		all("xxhash64(NULL)", "bigint", "42"),
		all("xxhash64(1L)", "bigint", "-7001672635703045582"),
		all("xxhash64('abc')", "bigint", "1423657621850124518"),
		all("xxhash64('')", "bigint", "-7444071767201028348"),
		all("xxhash64('abcdefghijklmnopqrstuvwxyz0123456789')", "bigint", "2724237963427677065"),
		all("xxhash64(-0.0D)", "bigint", "-5252525462095825812"),
		all("xxhash64(CAST('NaN' AS DOUBLE))", "bigint", "-3127944061524951246"),
		all("xxhash64(1.5D)", "bigint", "7738255526519901366"),
		all("xxhash64(1.25)", "bigint", "2287599437899865974"),
		all("xxhash64(CAST(-1.25 AS DECIMAL(38,2)))", "bigint", "7643149620469691090"),
		all("xxhash64(DATE '2024-02-29')", "bigint", "4183429117450946631"),
		all("xxhash64(TIMESTAMP '2020-06-01 12:34:56.789')", "bigint", "-7328931196837823581"),
		all("xxhash64(X'0102')", "bigint", "-449066226287847073"),
		all("sha2('abc', 224)", "string", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
		all("sha2('abc', 0)", "string", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
		all("sha2(s, 1)", "string", "NULL"),
		all("sha1('abc')", "string", "a9993e364706816aba3e25717850c26c9cd0d89d"),
		all("md5(X'')", "string", "d41d8cd98f00b204e9800998ecf8427e"),
		all("crc32('abc')", "bigint", "891568578"),
		all("hex(-1)", "string", "FFFFFFFFFFFFFFFF"),
		all("hex(unhex('414'))", "string", "0414"),
		all("unhex('zz') IS NULL", "boolean", "true"),
		all("CAST(CAST('ünï' AS BINARY) AS STRING)", "string", "ünï"),
		all("X'61' = 'a'", "boolean", "true"),
		all("sha2('abc', '256')", "string", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
		all("hex(X'0A' || X'0B')", "string", "0A0B"),
		all("hex(X'1')", "string", "01"),
		all("X'61' IN ('a', 'b')", "boolean", "true"),
		all("hex(unbase64('YQ==!!'))", "string", "61"),
		all("hex(unbase64('YW Jj'))", "string", "616263"),
		all("hex(unbase64('!!!'))", "string", ""),
		all("hex(unbase64('YWJ'))", "string", "6162"),
		all("base64('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')", "string", "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh\r\nYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYQ=="),
		{"hex(s)", "string:4162,78,NULL,3132"},
		{"hex(a)", "string:1,7FFFFFFF,NULL,5"},
		{"length(CAST(s AS BINARY))", "int:2,1,NULL,2"},
		{"CAST(s AS BINARY) < X'62'", "boolean:true,false,NULL,true"},
		{"base64(s)", "string:QWI=,eA==,NULL,MTI="},
	})
	checkErrors(t, rec, []evalCase{
		{"sha2(1, 256)", "sha2: argument 1 must be binary or a string, but an argument of type int"},
		{"CAST(a AS BINARY)", "cannot cast column a (int) to binary"},
		{"unbase64('Y')", "unbase64: 'Y' is not valid Base64"},
		{"unbase64('YQ=')", "is not valid Base64"},
		{"unbase64('YQ==YQ==')", "is not valid Base64"},
		{"unbase64('YW=j')", "is not valid Base64"},
		{"unbase64('=')", "is not valid Base64"},
	})
}

func TestRegexpFunctions(t *testing.T) {
	rec := smokeBatch(t)
	defer rec.Release()
	checkValues(t, rec, []evalCase{
		all("regexp_extract('abc123', '([a-z]+)([0-9]+)', 1)", "string", "abc"),
		all("regexp_extract('abc123', '([a-z]+)([0-9]+)')", "string", "abc"),
		all("regexp_extract('abc123', '([a-z]+)([0-9]+)', 0)", "string", "abc123"),
		all("regexp_extract('abc123', '([a-z]+)([0-9]+)', 2)", "string", "123"),
		all("regexp_extract('xyz', '([a-z]+)([0-9]+)', 3)", "string", ""),
		all("regexp_extract('abc', '(x)?abc', 1)", "string", ""),
		all("regexp_extract('ünïcode', '(n.)', 1)", "string", "nï"),
		all("regexp_extract(123, '2', 0)", "string", "2"),
		all("regexp_extract('abc', 'b', '0')", "string", "b"),
		all("regexp_extract('abc', NULL, 0)", "string", "NULL"),
		{"regexp_extract(s, '[0-9]', 0)", "string:,,NULL,1"},
		{"regexp_extract(s, s, 0)", "string:Ab,x,NULL,12"},
		all("regexp_replace('abc123abc', '[a-z]+', 'X')", "string", "X123X"),
		all("regexp_replace('abc123abc', '([a-z]+)', '<$1>')", "string", "<abc>123<abc>"),
		all("regexp_replace('abc123abc', '([a-z]+)', '\\\\$1')", "string", "$1123$1"),
		all("regexp_replace('abc', 'x', '$2')", "string", "abc"),
		all("regexp_replace('abc123abc', '([a-z]+)', '$12')", "string", "abc2123abc2"),
		// Java's ${name}; Spark's SQL text substitution would replace ${w} before the function sees it
		all("regexp_replace('abc123abc', '(?<w>[a-z]+)', '${w}!')", "string", "abc!123abc!"),
		all("regexp_replace('abc123abc', '[a-z]+', 'X', 2)", "string", "aX123X"),
		all("regexp_replace('abc123abc', '[a-z]+', 'X', 4)", "string", "abc123X"),
		all("regexp_replace('abc123abc', '[a-z]+', 'X', 100)", "string", "abc123abc"),
		all("regexp_replace('abc', '', '-')", "string", "-a-b-c-"),
		all("regexp_replace('', '', '-')", "string", "-"),
		all("regexp_replace('ünï', '.', 'X', 2)", "string", "üXX"),
		all("regexp_replace('abc', '^b', 'X', 2)", "string", "aXc"),
		all("regexp_like('abc', 'b')", "boolean", "true"),
		all("regexp_count('abcb', 'b')", "int", "2"),
		all("regexp_substr('abcb', 'b.')", "string", "bc"),
		all("regexp_substr('abcb', 'x')", "string", "NULL"),
	})
	checkErrors(t, rec, []evalCase{
		{"regexp_extract('abc123', '([a-z]+)([0-9]+)', 3)", "[INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX] regexp_extract: expects group index between 0 and 2, but got 3"},
		{"regexp_extract('abc', 'abc', 1)", "expects group index between 0 and 0, but got 1"},
		{"regexp_extract(s, '(', 1)", "regexp_extract: the regular expression '(' is invalid"},
		{"s RLIKE '['", "RLIKE: the regular expression '[' is invalid"},
		{"regexp_replace('abc123abc', '([a-z]+)', '$2')", "[INVALID_REGEXP_REPLACE]"},
		{"regexp_replace('abc123abc', '([a-z]+)', '$')", "[INVALID_REGEXP_REPLACE]"},
		{"regexp_replace(s, '[a-z]+', 'X', 0)", "the position must be between 1 and 2147483647"},
		{"regexp_extract(s, concat('(', s), 1)", "[INVALID_PARAMETER_VALUE.PATTERN]"},
	})
}
