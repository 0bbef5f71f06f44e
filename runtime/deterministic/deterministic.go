package deterministic

// EpochMs is where a deterministic run's clock starts: 2000-01-01T00:00:00Z,
// in milliseconds since the Unix epoch. Not 0, which code reads as "unset".
const EpochMs = 946_684_800_000

// Env and SeedEnv ask the goja runtime for a deterministic run (Env=1)
// with a seed (SeedEnv, decimal); runtime/goja's Main reads and unsets
// them, runtime/program sets them.
const (
	Env     = "EXECFARM_DETERMINISTIC"
	SeedEnv = "EXECFARM_SEED"
)

// Rand is a seeded xoshiro128** generator. Not safe for concurrent use.
type Rand struct{ s [4]uint32 }

// NewRand returns the generator of seed.
func NewRand(seed int64) *Rand {
	x := uint64(seed)
	var r Rand
	for i := 0; i < 2; i++ {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		r.s[2*i], r.s[2*i+1] = uint32(z), uint32(z>>32)
	}
	if r.s == [4]uint32{} {
		r.s[0] = 1 // xoshiro's one forbidden state; SplitMix64 never gives it
	}
	return &r
}

func rotl(x uint32, k uint) uint32 { return x<<k | x>>(32-k) }

// Uint32 returns the next 32 random bits.
func (r *Rand) Uint32() uint32 {
	s := &r.s
	result := rotl(s[1]*5, 7) * 9
	t := s[1] << 9
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = rotl(s[3], 11)
	return result
}

// Float64 returns a number in [0, 1) with 53 random bits, from two
// Uint32s: Math.random's values.
func (r *Rand) Float64() float64 {
	a, b := r.Uint32()>>5, r.Uint32()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// JS is the same generator in JavaScript: an expression whose value is a
// function (seed as a decimal string) returning {uint32(), float64()}.
const JS = `(seed) => {
  let x = BigInt.asUintN(64, BigInt(seed));
  const M = (1n << 64n) - 1n;
  const s = new Uint32Array(4);
  for (let i = 0; i < 2; i++) {
    x = (x + 0x9e3779b97f4a7c15n) & M;
    let z = x;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
    z ^= z >> 31n;
    s[2 * i] = Number(z & 0xffffffffn);
    s[2 * i + 1] = Number(z >> 32n);
  }
  if ((s[0] | s[1] | s[2] | s[3]) === 0) s[0] = 1;
  const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
  const uint32 = () => {
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  };
  const float64 = () => {
    const a = uint32() >>> 5, b = uint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  };
  return { uint32, float64 };
}`
