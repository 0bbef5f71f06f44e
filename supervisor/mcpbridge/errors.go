package mcpbridge

import "errors"

// ErrUnprotectedAddress is ListenHTTP's refusal of a non-loopback address
// without bearer tokens or without TLS: anyone who reaches it could run
// code, or read the tokens off the network.
var ErrUnprotectedAddress = errors.New("mcpbridge: MCP over HTTP off loopback needs bearer tokens and TLS")
