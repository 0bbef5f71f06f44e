// Package h2c opens HTTP/2 connections in cleartext with prior knowledge
// (RFC 9113 section 3.3), the way gRPC speaks on a unix socket, for tests
// that drive the supervisor's gRPC server a request body at a time.
package h2c

import (
	"context"
	"net"
	"net/http"
)

// DialUnix opens a new HTTP/2 connection to the unix socket sock. Each
// call is a connection of its own (net/http's pool is not used); closing
// the ClientConn closes it.
func DialUnix(ctx context.Context, sock string) (*http.ClientConn, error) {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return tr.NewClientConn(ctx, "http", "execfarm:80")
}
