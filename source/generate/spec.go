package generate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Spec is one parsed --gen 'PATH=TERM …' option.
//
// Grammar (whitespace separates terms outside parentheses):
//
//	gen    = path "=" term { term }
//	path   = column { "." field }          (dot path; "element" names a list's elements)
//	term   = generator | "nulls=" fraction
//	generator = name [ "(" [ arg { "," arg } ] ")" ]
//	arg    = bare | quoted [ ":" weight ]  (bare: any text without , ( ) ' ")
//	quoted = "'" … "'" | '"' … '"'         (a doubled quote inside stands for itself)
//
// At most one generator per column; nulls= alone keeps the type's default generator.
type Spec struct {
	// Text is the option as given ("price=normal(100,15) nulls=0.1").
	Text string
	// Path is the column's dot path.
	Path string
	// Name is the generator ("normal"), "" for the type's default.
	Name string
	// Args are the generator's arguments, in order.
	Args []Arg
	// Nulls is the fraction of null values (nulls=), 0 by default.
	Nulls float64
	// Paren reports whether the generator was written with parentheses.
	Paren bool
}

// Arg is one generator argument.
type Arg struct {
	// Text is the argument with quotes removed and surrounding space trimmed.
	Text string
	// Quoted reports whether it was quoted (then it is never split at ':').
	Quoted bool
	// Weight is the text after "quoted:" (choice weights), "" when none.
	Weight string
}

// ParseSpec parses one --gen option. Errors are usage errors that quote the option.
func ParseSpec(text string) (Spec, error) {
	s := Spec{Text: text}
	path, rest, ok := strings.Cut(text, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return s, specErr(text, "want COLUMN=SPEC, e.g. price=uniform(1,100)")
	}
	s.Path = path
	p := &specParser{s: rest, text: text}
	for {
		p.ws()
		if p.i >= len(p.s) {
			break
		}
		start := p.i
		name := p.ident()
		if name == "" {
			return s, specErr(text, fmt.Sprintf("unexpected %q at %q", p.s[p.i], p.s[start:]))
		}
		if p.peek() == '=' {
			p.i++
			val := p.bare()
			switch name {
			case "nulls":
				f, err := strconv.ParseFloat(val, 64)
				if err != nil || f < 0 || f > 1 {
					return s, specErr(text, fmt.Sprintf("nulls=%s: want a fraction in [0, 1]", val))
				}
				s.Nulls = f
			default:
				return s, specErr(text, fmt.Sprintf("unknown option %s= (the only option is nulls=FRACTION)", name))
			}
			continue
		}
		if s.Name != "" {
			return s, specErr(text, fmt.Sprintf("two generators (%s and %s); give one per column", s.Name, name))
		}
		s.Name = strings.ToLower(name)
		if p.peek() == '(' {
			p.i++
			s.Paren = true
			args, err := p.args()
			if err != nil {
				return s, specErr(text, err.Error())
			}
			s.Args = args
		}
		if p.i < len(p.s) && !unicode.IsSpace(rune(p.s[p.i])) {
			return s, specErr(text, fmt.Sprintf("unexpected %q after %s", p.s[p.i:], s.Name))
		}
	}
	return s, nil
}

type specParser struct {
	s, text string
	i       int
}

func (p *specParser) ws() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *specParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *specParser) ident() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *specParser) bare() string {
	start := p.i
	for p.i < len(p.s) && !unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i]
}

// args parses arguments up to and including ')'.
func (p *specParser) args() ([]Arg, error) {
	var args []Arg
	p.ws()
	if p.peek() == ')' {
		p.i++
		return nil, nil
	}
	for {
		p.ws()
		var a Arg
		if c := p.peek(); c == '\'' || c == '"' {
			p.i++
			var b strings.Builder
			closed := false
			for p.i < len(p.s) {
				ch := p.s[p.i]
				p.i++
				if ch == c {
					if p.peek() == c {
						b.WriteByte(c)
						p.i++
						continue
					}
					closed = true
					break
				}
				b.WriteByte(ch)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quote")
			}
			a.Text, a.Quoted = b.String(), true
			p.ws()
			if p.peek() == ':' {
				p.i++
				start := p.i
				for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != ')' {
					p.i++
				}
				a.Weight = strings.TrimSpace(p.s[start:p.i])
			}
		} else {
			start := p.i
			for p.i < len(p.s) && !strings.ContainsRune(",()'\"", rune(p.s[p.i])) {
				p.i++
			}
			if p.peek() == '(' || p.peek() == '\'' || p.peek() == '"' {
				return nil, fmt.Errorf("unexpected %q in an argument; quote arguments that contain it", p.s[p.i])
			}
			a.Text = strings.TrimSpace(p.s[start:p.i])
			if a.Text == "" {
				return nil, fmt.Errorf("empty argument")
			}
		}
		args = append(args, a)
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case ')':
			p.i++
			return args, nil
		default:
			return nil, fmt.Errorf("missing ')'")
		}
	}
}
