package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nullIsAbsent is receiving middleware that drops the arguments of a
// tools/call whose value is JSON null, before the SDK validates them
// against the tool's input schema and fills in its defaults: null means
// "not given", as an absent argument does, for every tool and argument
// (an optional one gets its default; a required one is missing). Clients
// and models send null for arguments they leave unset, and the schema's
// types ("object", "string", "integer") refused it: create_sandbox with
// "labels": null failed validation. Arguments that are no JSON object are
// left to the SDK's own refusal. The arguments are at most one MCP
// message (MaxMessageBytes over HTTP, the frame bound over stdio), so
// rewriting them holds at most about twice that.
func nullIsAbsent(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			call.Params.Arguments = withoutNulls(call.Params.Arguments)
		}
		return next(ctx, method, req)
	}
}

// withoutNulls returns args, a JSON object, without its members whose
// value is null, and {} for null itself; anything else as it is.
func withoutNulls(args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	if string(bytes.TrimSpace(args)) == "null" {
		// No arguments: an empty object, to which the SDK applies the
		// schema's defaults (it panics applying them to JSON null).
		return json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return args
	}
	dropped := false
	for k, v := range m {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(m, k)
			dropped = true
		}
	}
	if !dropped {
		return args
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}

// lifetimeKey is the context key of how create_sandbox's call gave
// shutdown_after_seconds (lifetimeArg).
type lifetimeKey struct{}

// lifetimeGiven is how a create_sandbox call gave shutdown_after_seconds.
type lifetimeGiven int

const (
	lifetimeAbsent lifetimeGiven = iota // not given: the profile's, else the server's default
	lifetimeNull                        // null: no timeout (seed 001's None)
	lifetimeValue                       // a number
)

// lifetimeArg is receiving middleware, before nullIsAbsent and the
// SDK's schema defaults, that notes in the call's context whether
// create_sandbox's shutdown_after_seconds was absent, null or a value:
// null is agent-sandbox's "no timeout" (the one null that is not
// "absent"), and the SDK fills in the schema's default (300) for an
// absent argument, which must stay the profile's lifetime.
func lifetimeArg(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil && call.Params.Name == CreateSandboxTool {
			given := lifetimeAbsent
			var m map[string]json.RawMessage
			if json.Unmarshal(call.Params.Arguments, &m) == nil {
				if v, ok := m["shutdown_after_seconds"]; ok {
					given = lifetimeValue
					if string(bytes.TrimSpace(v)) == "null" {
						given = lifetimeNull
					}
				}
			}
			ctx = context.WithValue(ctx, lifetimeKey{}, given)
		}
		return next(ctx, method, req)
	}
}

// lifetimeOf returns how ctx's create_sandbox call gave
// shutdown_after_seconds (absent when no middleware said).
func lifetimeOf(ctx context.Context) lifetimeGiven {
	g, _ := ctx.Value(lifetimeKey{}).(lifetimeGiven)
	return g
}
