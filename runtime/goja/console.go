package goja

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	gojavm "github.com/dop251/goja"

	"github.com/execfarm/execfarm/runtime/jsconsole"
)

// console is the state behind the console global.
type console struct {
	last   *stream // the stream written last, flushed on a switch
	r      *runner
	indent string // console.group nesting
	counts map[string]int
	timers map[string]time.Time
}

// installConsole defines the console global. log, info, debug, warn, dir,
// table, count, time* and group write to stdout; error, trace and assert
// write to stderr (DESIGN.md, "Runtimes"). Each line also goes to the
// console channel with its level (info, warn, error; log for the rest).
func (r *runner) installConsole() error {
	in, err := newInspector(r.vm)
	if err != nil {
		return err
	}
	in.wrapperLine = r.wrapperLine
	r.inspector = in
	c := &console{r: r, counts: map[string]int{}, timers: map[string]time.Time{}}
	vm := r.vm
	o := vm.NewObject()
	to := func(s *stream, k jsconsole.Kind) func(gojavm.FunctionCall) gojavm.Value {
		return func(c2 gojavm.FunctionCall) gojavm.Value {
			c.print(s, k, r.formatArgs(c2.Arguments))
			return gojavm.Undefined()
		}
	}
	methods := map[string]func(gojavm.FunctionCall) gojavm.Value{
		"log":   to(r.stdout, jsconsole.Log),
		"info":  to(r.stdout, jsconsole.Info),
		"debug": to(r.stdout, jsconsole.Log),
		"warn":  to(r.stdout, jsconsole.Warn),
		"table": to(r.stdout, jsconsole.Log),
		"error": to(r.stderr, jsconsole.Error),
		"dir": func(call gojavm.FunctionCall) gojavm.Value {
			c.print(r.stdout, jsconsole.Log, in.inspect(call.Argument(0)))
			return gojavm.Undefined()
		},
		"trace": func(call gojavm.FunctionCall) gojavm.Value {
			msg := "Trace"
			if len(call.Arguments) > 0 {
				msg += ": " + r.formatArgs(call.Arguments)
			}
			var b strings.Builder
			b.WriteString(msg)
			for _, f := range vm.CaptureCallStack(0, nil) {
				b.WriteString("\n\tat ")
				var sb bytes.Buffer
				f.Write(&sb)
				b.WriteString(sb.String())
			}
			c.print(r.stderr, jsconsole.Error, nodeStack(b.String(), r.wrapperLine))
			return gojavm.Undefined()
		},
		"assert": func(call gojavm.FunctionCall) gojavm.Value {
			if call.Argument(0).ToBoolean() {
				return gojavm.Undefined()
			}
			msg := "Assertion failed"
			if len(call.Arguments) > 1 {
				msg += ": " + r.formatArgs(call.Arguments[1:])
			}
			c.print(r.stderr, jsconsole.Error, msg)
			return gojavm.Undefined()
		},
		"count": func(call gojavm.FunctionCall) gojavm.Value {
			label := labelOf(call)
			c.counts[label]++
			c.print(r.stdout, jsconsole.Log, label+": "+strconv.Itoa(c.counts[label]))
			return gojavm.Undefined()
		},
		"countReset": func(call gojavm.FunctionCall) gojavm.Value {
			delete(c.counts, labelOf(call))
			return gojavm.Undefined()
		},
		"time": func(call gojavm.FunctionCall) gojavm.Value {
			c.timers[labelOf(call)] = time.Now()
			return gojavm.Undefined()
		},
		"timeLog": func(call gojavm.FunctionCall) gojavm.Value { c.timeLog(call, false); return gojavm.Undefined() },
		"timeEnd": func(call gojavm.FunctionCall) gojavm.Value { c.timeLog(call, true); return gojavm.Undefined() },
		"group": func(call gojavm.FunctionCall) gojavm.Value {
			if len(call.Arguments) > 0 {
				c.print(r.stdout, jsconsole.Log, r.formatArgs(call.Arguments))
			}
			c.indent += "  "
			return gojavm.Undefined()
		},
		"groupEnd": func(gojavm.FunctionCall) gojavm.Value {
			c.indent = c.indent[:max(len(c.indent)-2, 0)]
			return gojavm.Undefined()
		},
	}
	methods["groupCollapsed"] = methods["group"]
	for name, fn := range methods {
		if err := o.Set(name, fn); err != nil {
			return fmt.Errorf("install console.%s: %w", name, err)
		}
	}
	if err := vm.Set("console", o); err != nil {
		return fmt.Errorf("install console: %w", err)
	}
	return nil
}

func labelOf(call gojavm.FunctionCall) string {
	if v := call.Argument(0); !gojavm.IsUndefined(v) {
		return v.String()
	}
	return "default"
}

func (c *console) timeLog(call gojavm.FunctionCall, end bool) {
	label := labelOf(call)
	start, ok := c.timers[label]
	if !ok {
		c.print(c.r.stdout, jsconsole.Log, fmt.Sprintf("Warning: No such label '%s' for console.time%s()", label, map[bool]string{true: "End", false: "Log"}[end]))
		return
	}
	if end {
		delete(c.timers, label)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	c.print(c.r.stdout, jsconsole.Log, fmt.Sprintf("%s: %.3fms", label, ms))
}

// print writes msg and a newline to s, indented by console.group, and
// records it on the console channel as a line of kind k.
func (c *console) print(s *stream, k jsconsole.Kind, msg string) {
	// Keep the order of lines across stdout and stderr as written: flush
	// the other stream's buffer before switching.
	if c.last != nil && c.last != s {
		c.last.Flush()
	}
	c.last = s
	if c.indent != "" {
		msg = c.indent + strings.ReplaceAll(msg, "\n", "\n"+c.indent)
	}
	s.WriteString(msg + "\n")
	c.r.record(k, msg)
}

// formatArgs formats console arguments like Node's util.format: a leading
// string may hold %s %d %i %f %j %o %O %c %% directives; other arguments are
// appended, separated by spaces, strings raw and the rest inspected.
func (r *runner) formatArgs(args []gojavm.Value) string {
	parts := make([]string, 0, len(args))
	i := 0
	if len(args) > 0 {
		if s, ok := primitiveString(args[0]); ok && strings.IndexByte(s, '%') >= 0 {
			var used int
			s, used = r.applyFormat(s, args[1:])
			parts = append(parts, s)
			i = 1 + used
		}
	}
	for ; i < len(args); i++ {
		if s, ok := primitiveString(args[i]); ok {
			parts = append(parts, s)
		} else {
			parts = append(parts, r.inspectValue(args[i]))
		}
	}
	return strings.Join(parts, " ")
}

func primitiveString(v gojavm.Value) (string, bool) {
	switch v.(type) {
	case nil, *gojavm.Object, *gojavm.Symbol:
		return "", false
	}
	s, ok := v.Export().(string)
	return s, ok
}

// applyFormat expands the directives of f with args and returns the result
// and how many args it used.
func (r *runner) applyFormat(f string, args []gojavm.Value) (string, int) {
	var b strings.Builder
	used := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		d := f[i+1]
		if d == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		if !strings.ContainsRune("sdifjoOc", rune(d)) || used >= len(args) {
			b.WriteByte('%')
			continue
		}
		a := args[used]
		used++
		i++
		switch d {
		case 's':
			if s, ok := primitiveString(a); ok {
				b.WriteString(s)
			} else if _, isObj := a.(*gojavm.Object); isObj {
				b.WriteString(r.inspectValue(a))
			} else {
				b.WriteString(formatPrimitive(a, false))
			}
		case 'd', 'i', 'f':
			b.WriteString(r.formatNumber(a, d))
		case 'j':
			b.WriteString(r.jsonString(a))
		case 'o', 'O':
			b.WriteString(r.inspectValue(a))
		case 'c':
			// CSS has no meaning outside a browser.
		}
	}
	return b.String(), used
}

func (r *runner) formatNumber(a gojavm.Value, d byte) string {
	if _, isObj := a.(*gojavm.Object); isObj {
		return "NaN"
	}
	if s := formatPrimitive(a, false); strings.HasSuffix(s, "n") && d != 'f' {
		return s // bigint
	}
	n := a.ToFloat()
	if d == 'i' && !math.IsNaN(n) && !math.IsInf(n, 0) {
		n = math.Trunc(n)
	}
	if n == 0 && math.Signbit(n) {
		return "-0"
	}
	return r.vm.ToValue(n).String()
}

func (r *runner) jsonString(v gojavm.Value) string {
	b, err := v.ToObject(r.vm).MarshalJSON()
	if err != nil {
		return "[Circular]"
	}
	return string(b)
}
