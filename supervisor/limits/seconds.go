package limits

import (
	"math"
	"time"
)

// Seconds turns a request's seconds into a duration, saturating instead
// of overflowing: a huge value is then over any ceiling, and its error
// message shows it as asked rather than wrapped to a negative number.
func Seconds(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	if n < math.MinInt64/int64(time.Second) {
		return math.MinInt64
	}
	return time.Duration(n) * time.Second
}

// SecondsToMillis is n seconds in milliseconds, saturating as Seconds.
func SecondsToMillis(n int64) int64 {
	return min(max(n, math.MinInt64/1000), math.MaxInt64/1000) * 1000
}
