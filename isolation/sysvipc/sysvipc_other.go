//go:build !linux

package sysvipc

// Apply is Linux only: it returns ErrNotSupported.
func Apply(nsFD int, l Limits) error { return ErrNotSupported }
