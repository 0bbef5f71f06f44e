package goja

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	gojavm "github.com/dop251/goja"
)

// Limits of the value formatter, Node's util.inspect defaults.
const (
	inspectDepth      = 2  // nesting levels shown before [Object]
	inspectBreakWidth = 72 // longest single-line object or array
	inspectMaxItems   = 100
)

// inspectHelpers is evaluated once per Run; its functions read property
// descriptors without calling getters.
const inspectHelpers = `({
  props(o) {
    const out = [];
    for (const k of Reflect.ownKeys(o)) {
      const d = Object.getOwnPropertyDescriptor(o, k);
      if (!d || !d.enumerable) continue;
      out.push([k, d.get ? (d.set ? "Getter/Setter" : "Getter") : (d.set ? "Setter" : ""), d.value]);
    }
    return out;
  },
  entries(o) { return Array.from(o); },
  ctorName(o) {
    const p = Object.getPrototypeOf(o);
    if (p === null) return null;
    const c = p.constructor;
    return typeof c === "function" && typeof c.name === "string" ? c.name : "";
  },
  isClass(f) { return /^class\b/.test(Function.prototype.toString.call(f)); },
})`

var promiseType = reflect.TypeFor[*gojavm.Promise]()

// inspector formats values like Node's util.inspect, for console output and
// error reports.
type inspector struct {
	vm                              *gojavm.Runtime
	wrapperLine                     int // see runner.wrapperLine
	props, entries, ctorName, isCls gojavm.Callable
}

func newInspector(vm *gojavm.Runtime) (*inspector, error) {
	v, err := vm.RunScript("inspect.js", inspectHelpers)
	if err != nil {
		return nil, fmt.Errorf("compile inspect helpers: %w", err)
	}
	o := v.ToObject(vm)
	in := &inspector{vm: vm}
	for name, dst := range map[string]*gojavm.Callable{"props": &in.props, "entries": &in.entries, "ctorName": &in.ctorName, "isClass": &in.isCls} {
		fn, ok := gojavm.AssertFunction(o.Get(name))
		if !ok {
			return nil, fmt.Errorf("inspect helper %s is not a function", name)
		}
		*dst = fn
	}
	return in, nil
}

// inspect formats v as Node's util.inspect does with default options.
func (in *inspector) inspect(v gojavm.Value) string {
	return in.format(v, 0, nil, 0)
}

// inspectValue is inspect for error messages; it works before the
// inspector exists.
func (r *runner) inspectValue(v gojavm.Value) string {
	if r.inspector == nil {
		return v.String()
	}
	return r.inspector.inspect(v)
}

func (in *inspector) format(v gojavm.Value, depth int, seen []*gojavm.Object, indent int) string {
	if v == nil || gojavm.IsUndefined(v) {
		return "undefined"
	}
	if gojavm.IsNull(v) {
		return "null"
	}
	if sym, ok := v.(*gojavm.Symbol); ok {
		return "Symbol(" + sym.String() + ")"
	}
	o, ok := v.(*gojavm.Object)
	if !ok {
		return formatPrimitive(v, true)
	}
	for _, s := range seen {
		if s == o {
			return "[Circular *1]"
		}
	}
	seen = append(seen, o)

	switch o.ClassName() {
	case "Function":
		return in.formatFunction(o)
	case "Error":
		if depth == 0 {
			if s := errorStack(o, in.wrapperLine); s != "" {
				return s
			}
		}
		return "[" + errorHead(o) + "]"
	case "Date":
		if s, ok := in.callMethod(o, "toISOString"); ok {
			return s
		}
		return "Invalid Date"
	case "RegExp":
		return o.String()
	case "String", "Number", "Boolean":
		if inner, ok := in.callMethodValue(o, "valueOf"); ok {
			return "[" + o.ClassName() + ": " + formatPrimitive(inner, true) + "]"
		}
	}
	if o.ExportType() == promiseType {
		p := o.Export().(*gojavm.Promise)
		switch p.State() {
		case gojavm.PromiseStatePending:
			return "Promise { <pending> }"
		case gojavm.PromiseStateRejected:
			return "Promise { <rejected> " + in.format(p.Result(), depth+1, seen, indent+2) + " }"
		default:
			return "Promise { " + in.format(p.Result(), depth+1, seen, indent+2) + " }"
		}
	}

	ctor := in.constructorName(o)
	if o.ClassName() == "Array" {
		if depth > inspectDepth {
			return "[Array]"
		}
		n := o.Get("length").ToInteger()
		items := make([]string, 0, min(n, inspectMaxItems+1))
		for i := int64(0); i < n && i < inspectMaxItems; i++ {
			items = append(items, in.format(o.Get(strconv.FormatInt(i, 10)), depth+1, seen, indent+2))
		}
		if n > inspectMaxItems {
			items = append(items, fmt.Sprintf("... %d more items", n-inspectMaxItems))
		}
		prefix := ""
		if ctor != "Array" {
			prefix = ctor + "(" + strconv.FormatInt(n, 10) + ") "
		}
		return prefix + wrapItems("[", items, "]", indent)
	}

	if ctor == "Map" || ctor == "Set" {
		if depth > inspectDepth {
			return "[" + ctor + "]"
		}
		if ents, err := in.entries(gojavm.Undefined(), o); err == nil {
			eo := ents.ToObject(in.vm)
			n := eo.Get("length").ToInteger()
			items := make([]string, 0, n)
			for i := int64(0); i < n && i < inspectMaxItems; i++ {
				e := eo.Get(strconv.FormatInt(i, 10))
				if ctor == "Map" {
					pair := e.ToObject(in.vm)
					items = append(items, in.format(pair.Get("0"), depth+1, seen, indent+2)+" => "+in.format(pair.Get("1"), depth+1, seen, indent+2))
				} else {
					items = append(items, in.format(e, depth+1, seen, indent+2))
				}
			}
			return fmt.Sprintf("%s(%d) ", ctor, n) + wrapItems("{", items, "}", indent)
		}
	}

	prefix := ""
	switch ctor {
	case "Object":
	case "\x00null":
		prefix = "[Object: null prototype] "
	case "":
	default:
		prefix = ctor + " "
	}
	if depth > inspectDepth {
		name := ctor
		if name == "" || name == "\x00null" {
			name = "Object"
		}
		return "[" + name + "]"
	}
	propsV, err := in.props(gojavm.Undefined(), o)
	if err != nil {
		return prefix + "{}"
	}
	po := propsV.ToObject(in.vm)
	n := po.Get("length").ToInteger()
	items := make([]string, 0, n)
	for i := int64(0); i < n; i++ {
		p := po.Get(strconv.FormatInt(i, 10)).ToObject(in.vm)
		key := formatKey(p.Get("0"))
		if kind := p.Get("1").String(); kind != "" {
			items = append(items, key+": ["+kind+"]")
			continue
		}
		items = append(items, key+": "+in.format(p.Get("2"), depth+1, seen, indent+2))
	}
	if len(items) == 0 {
		return prefix + "{}"
	}
	return prefix + wrapItems("{", items, "}", indent)
}

func (in *inspector) formatFunction(o *gojavm.Object) string {
	name := ""
	if s, ok := primitiveString(o.Get("name")); ok {
		name = s
	}
	if v, err := in.isCls(gojavm.Undefined(), o); err == nil && v.ToBoolean() {
		if name == "" {
			return "[class (anonymous)]"
		}
		return "[class " + name + "]"
	}
	if name == "" {
		return "[Function (anonymous)]"
	}
	return "[Function: " + name + "]"
}

// constructorName returns the name of o's constructor, "\x00null" for a
// null prototype and "" when unknown.
func (in *inspector) constructorName(o *gojavm.Object) string {
	v, err := in.ctorName(gojavm.Undefined(), o)
	if err != nil {
		return ""
	}
	if gojavm.IsNull(v) {
		return "\x00null"
	}
	return v.String()
}

func (in *inspector) callMethodValue(o *gojavm.Object, name string) (gojavm.Value, bool) {
	fn, ok := gojavm.AssertFunction(o.Get(name))
	if !ok {
		return nil, false
	}
	v, err := fn(o)
	if err != nil {
		return nil, false
	}
	return v, true
}

func (in *inspector) callMethod(o *gojavm.Object, name string) (string, bool) {
	v, ok := in.callMethodValue(o, name)
	if !ok {
		return "", false
	}
	return v.String(), true
}

// errorHead is "Name: message", or "Name" when the message is empty.
func errorHead(o *gojavm.Object) string {
	name, msg := "Error", ""
	if v := o.Get("name"); v != nil && !gojavm.IsUndefined(v) {
		name = v.String()
	}
	if v := o.Get("message"); v != nil && !gojavm.IsUndefined(v) {
		msg = v.String()
	}
	if msg == "" {
		return name
	}
	return name + ": " + msg
}

// wrapItems joins items on one line when short enough, else one per line.
func wrapItems(open string, items []string, closing string, indent int) string {
	if len(items) == 0 {
		return open + closing
	}
	total := indent + len(open) + len(closing)
	multiline := false
	for _, it := range items {
		total += len(it) + 2
		if strings.Contains(it, "\n") {
			multiline = true
		}
	}
	if !multiline && total <= inspectBreakWidth {
		return open + " " + strings.Join(items, ", ") + " " + closing
	}
	pad := strings.Repeat(" ", indent+2)
	return open + "\n" + pad + strings.Join(items, ",\n"+pad) + "\n" + strings.Repeat(" ", indent) + closing
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

func formatKey(k gojavm.Value) string {
	if sym, ok := k.(*gojavm.Symbol); ok {
		return "[Symbol(" + sym.String() + ")]"
	}
	s := k.String()
	if identifier.MatchString(s) {
		return s
	}
	return quote(s)
}

// formatPrimitive formats a string, number, boolean or bigint; strings are
// quoted when quoted is set.
func formatPrimitive(v gojavm.Value, quoted bool) string {
	switch x := v.Export().(type) {
	case string:
		if quoted {
			return quote(x)
		}
		return x
	case float64:
		if x == 0 && math.Signbit(x) {
			return "-0"
		}
		return v.String()
	case *big.Int:
		return x.String() + "n"
	default:
		return v.String()
	}
}

// quote quotes s with single quotes, or double quotes or backticks when s
// holds single quotes, as Node does.
func quote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 {
		if strings.IndexByte(s, '"') < 0 {
			q = '"'
		} else if strings.IndexByte(s, '`') < 0 && !strings.Contains(s, "${") {
			q = '`'
		}
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
