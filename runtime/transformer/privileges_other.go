//go:build !linux

package transformer

// dropPrivileges does nothing off Linux, where execfarm runs no sandbox
// and a supervisor does not serve (the package builds there for tools).
func dropPrivileges() error { return nil }
