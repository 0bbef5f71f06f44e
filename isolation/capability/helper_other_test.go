//go:build !linux

package capability

func runHelper() int { return 2 }
