package main

import (
	"strings"
	"testing"
)

// TestServeRefusesNegativeCountsAndDurations: serve stops before touching
// the host when a flag that counts or lasts is negative (or, for
// --retention, zero), naming the flag and its value.
func TestServeRefusesNegativeCountsAndDurations(t *testing.T) {
	for _, args := range [][]string{
		{"--warm-pool", "-1"},
		{"--max-concurrent", "-2"},
		{"--queue-size", "-1"},
		{"--default-timeout-ms", "-5"},
		{"--grace", "-5s"},
		{"--retention", "-1s"},
		{"--retention", "0s"},
	} {
		cmd := serveCmd()
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), args[0]+" "+strings.TrimSuffix(args[1], "s")) {
			t.Errorf("serve %v: %v; want refused, naming the flag and its value", args, err)
		}
	}
}
