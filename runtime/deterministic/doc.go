// Package deterministic is what a deterministic run (ExecuteRequest's
// deterministic flag) gives the JavaScript runtimes instead of the real
// clock and randomness, so that a program re-run with the same seed
// prints the same thing:
//
//   - a clock that starts at EpochMs (Date.now(), new Date()) and at 0
//     (performance.now()), and advances only when a timer fires: to the
//     time the timer was due on that clock (when set, plus its delay).
//     Timers still wait their real delay; code that runs between them
//     takes no time on the clock, and timers fire in the order of the
//     clock (when due on it, then when set), not of real time;
//   - Math.random from Rand seeded with the request's seed, and, in node,
//     crypto.getRandomValues and crypto.randomUUID from the same Rand.
//
// goja uses Rand directly; node's prelude implements the same generator
// in JavaScript (JS), so that both runtimes give the same values for one
// seed (the tests hold them to NewRand's).
//
// Rand is xoshiro128** (Blackman and Vigna, "Scrambled linear
// pseudorandom number generators", 2021), seeded by SplitMix64 from the
// 64-bit seed: small, fast in JavaScript with 32-bit integer operations,
// and not for secrets.
package deterministic
