package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxExactInt is the largest integer argument a tool takes: 2^53-1, the
// largest that JSON numbers keep exactly when decoded as float64, as the
// MCP SDK decodes arguments to validate them against the schema.
const MaxExactInt = 1<<53 - 1

// intRange is the accepted range of an integer argument, inclusive.
type intRange struct{ min, max int64 }

// toolInts maps a tool's name to the ranges of its integer arguments.
type toolInts map[string]map[string]intRange

// add records the integer arguments of t's input schema: the schema's
// minimum and maximum where it gives them, else ±MaxExactInt.
func (ti toolInts) add(t *mcp.Tool) {
	s, ok := t.InputSchema.(*jsonschema.Schema)
	if !ok || s == nil {
		return
	}
	args := map[string]intRange{}
	for name, p := range s.Properties {
		if p.Type != "integer" && !slices.Contains(p.Types, "integer") {
			continue
		}
		r := intRange{-MaxExactInt, MaxExactInt}
		if p.Minimum != nil {
			r.min = max(r.min, int64(math.Ceil(*p.Minimum)))
		}
		if p.Maximum != nil {
			r.max = min(r.max, int64(math.Floor(*p.Maximum)))
		}
		args[name] = r
	}
	ti[t.Name] = args
}

// middleware refuses a tools/call whose integer argument is not an
// integer or is out of its range before the SDK decodes it: the SDK
// reads numbers as float64, so 2^63-1 would reach the handler rounded,
// or be refused naming a Go type (and a string or an object for an
// integer in Go's notation, "map[a:1]"). The refusal is a tool error,
// "INVALID_ARGUMENT: <argument>: <value as sent> ...: want an integer
// from <min> to <max>", or for a value that is no number "<argument>: a
// string|an object|an array|a boolean: want an integer from <min> to
// <max>". Arguments that are no JSON object, and a null (absent:
// nullIsAbsent), are left to the SDK.
func (ti toolInts) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			if err := ti.check(call.Params.Name, call.Params.Arguments); err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: wireError(err).Error()}}}, nil
			}
		}
		return next(ctx, method, req)
	}
}

// check returns an INVALID_ARGUMENT status error for the first integer
// argument of tool in args that is no integer or out of its range.
func (ti toolInts) check(tool string, args json.RawMessage) error {
	ranges := ti[tool]
	if len(ranges) == 0 || len(args) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(ranges)) {
		raw, ok := m[name]
		if !ok {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			if kind := jsonKind(v); kind != "" {
				r := ranges[name]
				return invalid("%s: %s: want an integer from %d to %d", name, kind, r.min, r.max)
			}
			continue
		}
		if err := ranges[name].check(name, string(n)); err != nil {
			return err
		}
	}
	return nil
}

// check refuses s, a JSON number as sent, unless it is an integer in r.
func (r intRange) check(name, s string) error {
	want := fmt.Sprintf("want an integer from %d to %d", r.min, r.max)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		if i < r.min || i > r.max {
			return invalid("%s: %s is out of range: %s", name, s, want)
		}
		return nil
	}
	// Past int64, or written with a fraction or an exponent.
	f, _ := strconv.ParseFloat(s, 64) // ±Inf past float64, still "out of range"
	if f != math.Trunc(f) {
		return invalid("%s: %s is not an integer: %s", name, s, want)
	}
	if f < float64(r.min) || f > float64(r.max) {
		return invalid("%s: %s is out of range: %s", name, s, want)
	}
	return nil
}

// jsonKind names the kind of a decoded JSON value that is no number, as
// a refusal says it; "" for a number or null.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	}
	return ""
}
