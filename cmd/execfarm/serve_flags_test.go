package main

import (
	"strings"
	"testing"

	"github.com/execfarm/execfarm/supervisor"
)

// TestServeRefusesNegativeCountsAndDurations: serve stops before touching
// the host when a flag that counts or lasts is negative (or, for
// --retention, under a millisecond), naming the flag and its value.
func TestServeRefusesNegativeCountsAndDurations(t *testing.T) {
	for _, args := range [][]string{
		{"--warm-pool", "-1"},
		{"--max-concurrent", "-2"},
		{"--queue-size", "-1"},
		{"--default-timeout-ms", "-5"},
		{"--grace", "-5s"},
		{"--retention", "-1s"},
		{"--retention", "0s"},
		{"--retention", "500us"}, // under the registry's unit: it read 0 as its default
		{"--error-style", "ProDisco"},
	} {
		cmd := serveCmd()
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if err == nil || !strings.HasPrefix(err.Error(), args[0]+" ") || !strings.Contains(err.Error(), ": want ") {
			t.Errorf("serve %v: %v; want refused, naming the flag and its value", args, err)
		}
	}
}

// TestServeRefusesBadMemoryBudget: --memory-budget takes a positive
// amount of bytes with units; anything else stops serve naming the flag.
func TestServeRefusesBadMemoryBudget(t *testing.T) {
	for _, v := range []string{"0", "-1Gi", "lots"} {
		cmd := serveCmd()
		cmd.SetArgs([]string{"--memory-budget", v})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--memory-budget") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("serve --memory-budget %s: %v; want refused, naming the flag", v, err)
		}
	}
}

// TestServeRefusesBadMaxMemory: --max-memory takes a positive amount of
// bytes with units, at most --memory-budget; anything else stops serve
// before it touches the host, naming the flag.
func TestServeRefusesBadMaxMemory(t *testing.T) {
	for _, args := range [][]string{
		{"--max-memory", "0"},
		{"--max-memory", "lots"},
		{"--max-memory", "4Gi", "--memory-budget", "2Gi"},
	} {
		cmd := serveCmd()
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--max-memory") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("serve %v: %v; want refused, naming the flag", args, err)
		}
	}
}

// TestQueueSizeZeroLetsNoneWait: `--queue-size 0` reaches the supervisor
// as supervisor.NoQueue (none may wait), not as the Config's 0, which is
// its default of 1000; other sizes pass as they are.
func TestQueueSizeZeroLetsNoneWait(t *testing.T) {
	for flag, want := range map[int]int{0: supervisor.NoQueue, 1: 1, 1000: 1000} {
		if got := supervisorConfig(supervisor.Config{QueueSize: flag}).QueueSize; got != want {
			t.Errorf("--queue-size %d: Config.QueueSize %d, want %d", flag, got, want)
		}
	}
}
