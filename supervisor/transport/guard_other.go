//go:build !linux

package transport

import "net"

// peerUID is not read off Linux: every local peer is one peer.
func peerUID(*net.UnixConn) (string, bool) { return "", false }

// nofileLimit is not read off Linux.
func nofileLimit() int { return 0 }
