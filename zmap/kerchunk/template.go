package kerchunk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxDepth bounds templates that name templates.
const maxDepth = 8

// maxRendered bounds the text a template renders to.
const maxRendered = 1 << 16

// render expands the {{ expression }} parts of t, as jinja2 does for the
// expressions kerchunk writes: names of gen variables and templates,
// integers, quoted strings, + - * / // % and parentheses, and calls of
// templates with keyword arguments (f(c='text')).
func render(t string, vars map[string]any, templates map[string]string, depth int) (string, error) {
	if depth > maxDepth {
		return "", errors.New("templates nest too deep")
	}
	var b strings.Builder
	for {
		i := strings.Index(t, "{{")
		if i < 0 {
			b.WriteString(t)
			break
		}
		j := strings.Index(t[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("%q: {{ is not closed", t)
		}
		b.WriteString(t[:i])
		p := &parser{src: t[i+2 : i+j], vars: vars, templates: templates, depth: depth}
		v, err := p.parse()
		if err != nil {
			return "", fmt.Errorf("{{%s}}: %w", t[i+2:i+j], err)
		}
		b.WriteString(text(v))
		if b.Len() > maxRendered {
			return "", errors.New("template renders too long a text")
		}
		t = t[i+j+2:]
	}
	return b.String(), nil
}

func text(v any) string {
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	return v.(string)
}

// parser evaluates one expression by recursive descent.
type parser struct {
	src       string
	pos       int
	vars      map[string]any
	templates map[string]string
	depth     int
}

func (p *parser) parse() (any, error) {
	v, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q", p.src[p.pos:])
	}
	return v, nil
}

func (p *parser) space() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\n\r", rune(p.src[p.pos])) {
		p.pos++
	}
}

// eat consumes op when it comes next.
func (p *parser) eat(op string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], op) {
		p.pos += len(op)
		return true
	}
	return false
}

func (p *parser) sum() (any, error) {
	v, err := p.product()
	for err == nil {
		switch {
		case p.eat("+"):
			var w any
			if w, err = p.product(); err == nil {
				v, err = add(v, w)
			}
		case p.eat("-"):
			var w any
			if w, err = p.product(); err == nil {
				v, err = arith(v, w, '-')
			}
		default:
			return v, nil
		}
	}
	return nil, err
}

func (p *parser) product() (any, error) {
	v, err := p.unary()
	for err == nil {
		var op byte
		switch {
		case p.eat("//"):
			op = 'd'
		case p.eat("*"):
			op = '*'
		case p.eat("/"):
			op = '/'
		case p.eat("%"):
			op = '%'
		default:
			return v, nil
		}
		var w any
		if w, err = p.unary(); err == nil {
			v, err = arith(v, w, op)
		}
	}
	return nil, err
}

func (p *parser) unary() (any, error) {
	if p.eat("-") {
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return arith(int64(0), v, '-')
	}
	return p.primary()
}

func (p *parser) primary() (any, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, errors.New("expression ends early")
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		v, err := p.sum()
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, errors.New("( is not closed")
		}
		return v, nil
	case c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			return nil, err
		}
		return n, nil
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.src[p.pos+1:], c)
		if end < 0 {
			return nil, errors.New("string is not closed")
		}
		s := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return s, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		name := p.ident()
		if p.eat("(") {
			return p.call(name)
		}
		if v, ok := p.vars[name]; ok {
			return v, nil
		}
		t, ok := p.templates[name]
		if !ok {
			return nil, fmt.Errorf("%q is not defined", name)
		}
		return render(t, p.vars, p.templates, p.depth+1)
	}
	return nil, fmt.Errorf("unexpected %q", p.src[p.pos:])
}

func (p *parser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

// call renders template name with keyword arguments.
func (p *parser) call(name string) (any, error) {
	t, ok := p.templates[name]
	if !ok {
		return nil, fmt.Errorf("template %q is not defined", name)
	}
	args := map[string]any{}
	for !p.eat(")") {
		if len(args) > 0 && !p.eat(",") {
			return nil, errors.New("arguments are not separated by commas")
		}
		p.space()
		k := p.ident()
		if k == "" || !p.eat("=") {
			return nil, errors.New("arguments are not name=value")
		}
		v, err := p.sum()
		if err != nil {
			return nil, err
		}
		args[k] = v
	}
	return render(t, args, p.templates, p.depth+1)
}

func add(a, b any) (any, error) {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		if len(as)+len(bs) > maxRendered {
			return nil, errors.New("too long a text")
		}
		return as + bs, nil
	}
	return arith(a, b, '+')
}

func arith(a, b any, op byte) (any, error) {
	x, ok1 := a.(int64)
	y, ok2 := b.(int64)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%c of %v and %v: not integers", op, a, b)
	}
	const lim = 1 << 62
	if x > lim || x < -lim || y > lim || y < -lim {
		return nil, errors.New("integer too large")
	}
	switch op {
	case '+':
		return x + y, nil
	case '-':
		return x - y, nil
	case '*':
		if x != 0 && (y > lim/abs(x) || y < -lim/abs(x)) {
			return nil, errors.New("integer too large")
		}
		return x * y, nil
	}
	if y == 0 {
		return nil, errors.New("division by zero")
	}
	switch op {
	case '/':
		if x%y != 0 {
			return nil, fmt.Errorf("%d / %d is not an integer", x, y)
		}
		return x / y, nil
	case 'd': // Python's floor division
		q := x / y
		if (x%y != 0) && ((x < 0) != (y < 0)) {
			q--
		}
		return q, nil
	default: // '%', Python's: the sign of the divisor
		m := x % y
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		return m, nil
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
