//go:build !race

package transformer

// raceBuild is false: see race.go.
const raceBuild = false
