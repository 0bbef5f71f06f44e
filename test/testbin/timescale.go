package testbin

import (
	"os"
	"strconv"
	"time"
)

// TimeScaleEnv names the factor by which the suites' timing assertions
// are scaled: a positive integer, 1 when unset or invalid. make
// test-cgroup2 sets it for its VM, which runs programs several times
// slower than the host (qemu without KVM).
const TimeScaleEnv = "EXECFARM_TEST_TIME_SCALE"

// TimeScale returns the factor of TimeScaleEnv. It scales upper bounds
// that a test asserts on how long something took, and a limit that
// sandbox start-up counts against when the test needs its program to
// run before the limit ends it (the wall-clock timeout). It never scales
// a sleep.
func TimeScale() int64 {
	n, err := strconv.ParseInt(os.Getenv(TimeScaleEnv), 10, 64)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Scaled is d multiplied by TimeScale.
func Scaled(d time.Duration) time.Duration { return d * time.Duration(TimeScale()) }
