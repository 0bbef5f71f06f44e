// Package detertest holds the program that the goja and node runtimes'
// tests run deterministically, and what it must print: one fixture, so
// that both runtimes are held to the same clock, timer order and
// Math.random values.
package detertest

import (
	"fmt"
	"strconv"

	"github.com/execfarm/execfarm/runtime/deterministic"
)

// Program prints the clock and three Math.random values, blocks (real
// time passes, more than 20 ms: node waits 40 ms, goja spins; the clock
// must not move),
// then sets timers whose order on the deterministic clock (10, 25, 30,
// 50, 60 ms) differs from their order in real time (the 30 ms one was set
// before the spin).
const Program = `
const t0 = Date.now();
console.log(t0, new Date().toISOString(), performance.now(), Math.random(), Math.random(), Math.random());
setTimeout(() => console.log("a", Date.now() - t0, performance.now()), 30);
if (typeof SharedArrayBuffer === "function" && typeof Atomics === "object" && typeof Atomics.wait === "function") {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 40); // node: 40 ms of real time
} else {
  let spin = 0;
  for (let i = 0; i < 2e5; i++) spin += i; // goja: about 100 ms, more under the race detector
}
console.log("spun", Date.now() - t0);
setTimeout(() => console.log("b", Date.now() - t0), 10);
const iv = setInterval(() => console.log("i", Date.now() - t0), 25);
setTimeout(() => { clearInterval(iv); console.log("end", new Date().toISOString()); }, 60);
`

// Want is what Program prints on a deterministic run with seed. The
// seeds the tests use give Math.random values of at least 1e-7, which
// JavaScript and strconv's 'f' format print alike.
func Want(seed int64) string {
	r := deterministic.NewRand(seed)
	f := func() string { return strconv.FormatFloat(r.Float64(), 'f', -1, 64) }
	a, b, c := f(), f(), f()
	return fmt.Sprintf("%d 2000-01-01T00:00:00.000Z 0 %s %s %s\nspun 0\nb 10\ni 25\na 30 30\ni 50\nend 2000-01-01T00:00:00.060Z\n",
		deterministic.EpochMs, a, b, c)
}
