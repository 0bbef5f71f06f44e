package main

import (
	"testing"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// TestMemoryLine: health shows the memory budget HealthCheck reports,
// what is held and what is free, in the serve flags' units; a response
// without one says so rather than showing a budget of 0.
func TestMemoryLine(t *testing.T) {
	for _, tt := range []struct {
		total, held int64
		want        string
	}{
		{1 << 30, 768 << 20, "memory budget: 768Mi held of 1Gi (256Mi free)"},
		{21 << 30, 0, "memory budget: 0 bytes held of 21Gi (21Gi free)"},
		{0, 0, "memory budget: not reported"},
	} {
		resp := &sandboxv1.HealthCheckResponse{MemoryBudgetBytes: tt.total, MemoryHeldBytes: tt.held}
		if got := memoryLine(resp); got != tt.want {
			t.Errorf("memoryLine(%d, %d) = %q, want %q", tt.total, tt.held, got, tt.want)
		}
	}
}

// TestUnhealthyMessage: health names the reason the supervisor gives for
// being unhealthy (it said "shutting down" when its fork server had
// stopped; red-team pass), and says only "not healthy" without one.
func TestUnhealthyMessage(t *testing.T) {
	for reason, want := range map[string]string{
		"fork server unavailable": "the supervisor is not healthy: fork server unavailable",
		"shutting down":           "the supervisor is not healthy: shutting down",
		"":                        "the supervisor is not healthy",
	} {
		if got := unhealthyMessage(&sandboxv1.HealthCheckResponse{UnhealthyReason: reason}); got != want {
			t.Errorf("unhealthyMessage(%q) = %q, want %q", reason, got, want)
		}
	}
}
