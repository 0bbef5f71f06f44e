package sysvipc

import (
	"testing"

	"github.com/execfarm/execfarm/isolation/rootfs"
)

// TestLimitsFor: a sandbox's System V shared memory is bounded to its
// /dev/shm's size, in one segment and in all, its segments to half the
// tmpfs's inodes (at most the kernel's default), and full it charges no
// more than a tmpfs of that size (the budget supervisor/limits counts);
// message queues and semaphores get the fixed small bounds.
func TestLimitsFor(t *testing.T) {
	fixed := Limits{MsgQueues: 4, MsgQueueBytes: 4096, MsgMaxBytes: 4096, SemPerSet: 32, SemTotal: 1024, SemOpsPerCall: 32, SemSets: 128}
	shm := func(maxBytes, pages, segments int64) Limits {
		l := fixed
		l.ShmMaxBytes, l.ShmAllPages, l.ShmSegments = maxBytes, pages, segments
		return l
	}
	tests := []struct {
		bytes, pageSize int64
		want            Limits
	}{
		{bytes: 1 << 20, pageSize: 4096, want: shm(1<<20, 256, 128)},
		{bytes: 5 << 20, pageSize: 4096, want: shm(5<<20, 1280, 640)},
		{bytes: 0, pageSize: 4096, want: shm(64<<20, 16384, MaxShmSegments)},
		{bytes: 64 << 20, pageSize: 65536, want: shm(64<<20, 1024, MaxShmSegments)},
		{bytes: 2 << 30, pageSize: 4096, want: shm(2<<30, 524288, MaxShmSegments)},
	}
	for _, tt := range tests {
		if got := LimitsFor(tt.bytes, tt.pageSize); got != tt.want {
			t.Errorf("LimitsFor(%d, %d) = %+v, want %+v", tt.bytes, tt.pageSize, got, tt.want)
		}
	}
	for _, b := range []int64{4096, 1 << 20, 1<<20 + 4096, 5 << 20, 64 << 20, 2 << 30} {
		l := LimitsFor(b, 4096)
		c := ShmChargeBytes(b)
		if c > rootfs.TmpfsChargeBytes(b) || c < l.ShmAllPages*4096+l.ShmSegments*ShmSegmentChargeBytes {
			t.Errorf("ShmChargeBytes(%d) = %d: want at least the limits' %+v charge and at most TmpfsChargeBytes %d", b, c, l, rootfs.TmpfsChargeBytes(b))
		}
	}
	if MsgSemChargeBytes > 2<<20 {
		t.Errorf("MsgSemChargeBytes = %d, want at most 2 MiB", MsgSemChargeBytes)
	}
}

// TestSysctls: the files and the values written, as the kernel prints
// them back (kernel.sem tab-separated).
func TestSysctls(t *testing.T) {
	got := LimitsFor(1<<20, 4096).sysctls()
	want := []sysctl{
		{"shmmax", "1048576"}, {"shmall", "256"}, {"shmmni", "128"},
		{"msgmni", "4"}, {"msgmnb", "4096"}, {"msgmax", "4096"},
		{"sem", "32\t1024\t32\t128"},
	}
	if len(got) != len(want) {
		t.Fatalf("sysctls = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sysctls[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
