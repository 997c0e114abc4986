package expr

import "strings"

// ColumnRefs lists the column references of a parsed expression, each as the parts of its
// dot path (["value", "user", "id"]; a backquoted part is one part), once each, in the order
// they first appear. The expect tool shows their values for a row that fails an expectation. Node types
// it does not know (none today) contribute nothing.
func ColumnRefs(n Node) [][]string {
	var out [][]string
	seen := map[string]bool{}
	var walk func(Node)
	walk = func(n Node) {
		switch n := n.(type) {
		case nil:
		case *Ident:
			p := strings.Join(n.Path, "\x00")
			if !seen[p] {
				seen[p] = true
				out = append(out, n.Path)
			}
		case *Unary:
			walk(n.X)
		case *Binary:
			walk(n.L)
			walk(n.R)
		case *IsNull:
			walk(n.X)
		case *In:
			walk(n.X)
			for _, x := range n.List {
				walk(x)
			}
		case *Between:
			walk(n.X)
			walk(n.Lo)
			walk(n.Hi)
		case *Like:
			walk(n.X)
			walk(n.Pattern)
		case *Case:
			walk(n.Operand)
			for _, w := range n.Whens {
				walk(w.Cond)
				walk(w.Then)
			}
			walk(n.Else)
		case *Cast:
			walk(n.X)
		case *Call:
			for _, x := range n.Args {
				walk(x)
			}
		}
	}
	walk(n)
	return out
}
