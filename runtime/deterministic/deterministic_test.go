package deterministic

import (
	"math"
	"testing"
)

// TestRand: a seed always gives the same values, another seed others;
// Float64 is in [0, 1). (runtime/node's tests hold JS to NewRand.)
func TestRand(t *testing.T) {
	a, b, c := NewRand(42), NewRand(42), NewRand(43)
	same, diff := true, true
	for range 1000 {
		x, y, z := a.Float64(), b.Float64(), c.Float64()
		if x < 0 || x >= 1 || math.IsNaN(x) {
			t.Fatalf("Float64 = %v, out of [0, 1)", x)
		}
		same = same && x == y
		diff = diff && x != z
	}
	if !same || !diff {
		t.Fatalf("same seed same values: %v; other seed other values: %v", same, diff)
	}
	r := NewRand(42)
	got := []uint32{r.Uint32(), r.Uint32(), r.Uint32()}
	if got[0] == got[1] || got[1] == got[2] {
		t.Fatalf("Uint32 repeats: %v", got)
	}
	for _, seed := range []int64{0, -1, math.MinInt64, math.MaxInt64} {
		if NewRand(seed).s == [4]uint32{} {
			t.Errorf("seed %d: the all-zero state", seed)
		}
	}
}
