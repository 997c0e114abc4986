package window

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrArithmeticOverflow reports an integer sum that left the bigint range, Spark's
// ARITHMETIC_OVERFLOW in ANSI mode.
var ErrArithmeticOverflow = errors.New("ARITHMETIC_OVERFLOW")

// overflowed is the Aggs.OnOverflow hook of a Manager: it keeps the first overflow as the
// manager's error, naming the aggregate, the key and the window of slot s (alive now).
func (m *Manager) overflowed(s int32, c AggCall) {
	if m.aggErr != nil {
		return
	}
	m.aggErr = fmt.Errorf("%w: %s overflows bigint for key %s in window [%s, %s) (as Spark SQL in ANSI mode); use try_%s(%s) for null on overflow, or cast the column to double",
		ErrArithmeticOverflow, c, m.keyText(m.sKey[s]), TimeOf(m.sStart[s]).Format(wmLayout), TimeOf(m.sEnd[s]).Format(wmLayout), c.Func, c.Arg)
}

const wmLayout = "2006-01-02T15:04:05.999999Z07:00"

// Err returns the first aggregate error of the processing so far (an integer sum that
// overflowed), nil when none: the caller fails before emitting the manager's output.
func (m *Manager) Err() error { return m.aggErr }

// keyText renders key kid as "col=value, …" ("(no key)" without key columns).
func (m *Manager) keyText(kid int32) string {
	fields := m.codec.Fields()
	if len(fields) == 0 {
		return "(no key)"
	}
	bs := make([]array.Builder, len(fields))
	for i, f := range fields {
		bs[i] = array.NewBuilder(m.mem, f.Type)
		defer bs[i].Release()
	}
	if err := m.codec.Decode([]byte(m.keys[kid].key), bs); err != nil {
		return fmt.Sprintf("%q", m.keys[kid].key)
	}
	parts := make([]string, len(fields))
	for i, b := range bs {
		arr := b.NewArray()
		parts[i] = fields[i].Name + "=" + arr.ValueStr(0)
		arr.Release()
	}
	return strings.Join(parts, ", ")
}
