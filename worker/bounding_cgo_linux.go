//go:build linux && cgo

package worker

// emptyBounding runs before the Go runtime starts (a C constructor, as
// runc's nsexec does), while the worker has a single thread: it empties
// that thread's capability bounding set, which every thread the runtime
// creates later inherits. A new user namespace starts with a full
// bounding set (41 capabilities), and emptying it afterwards costs a round
// trip to every thread per capability (capability.Restrict: ~6 ms per
// sandbox on a 2-core host); here it costs 41 local prctl calls. The
// worker keeps what it needs: dropping a capability from the bounding set
// leaves the permitted and effective sets alone (capabilities(7)), and the
// worker never execs. It acts only in a sandbox worker
// (EXECFARM_SANDBOX_CONFIG set) and ignores errors: capability.Restrict
// drops whatever is left on every thread and verifies the result.

/*
#include <stdlib.h>
#include <sys/prctl.h>

__attribute__((constructor)) static void execfarm_empty_bounding(void) {
	if (getenv("EXECFARM_SANDBOX_CONFIG") == NULL) {
		return;
	}
	// The worker runs from a sealed memfd (/proc/self/fd/N), which names it
	// "N"; name it for ps and /proc/PID/comm (threads inherit the name).
	prctl(PR_SET_NAME, "execfarm-worker", 0, 0, 0);
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0) {
			break; // past the kernel's last capability
		}
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	}
}
*/
import "C"
