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
// value is null; anything else as it is.
func withoutNulls(args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
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
