// Package hostile runs a data-driven suite of hostile programs against a
// real execfarm supervisor: fork, thread and heap bombs, filesystem and
// output floods, escapes through /proc, /sys, symlinks, sockets and
// forbidden system calls, daemons that try to outlive their execution, and
// state left behind for the next execution.
//
// Each case is one file in cases/ (adding a case is adding a file): the
// program itself, with a header of comment directives naming its runtime,
// limits and the expected outcome; README.md describes the format. The
// suite needs root on Linux; it skips through one helper, requireRoot,
// otherwise, and fails (never skips) on a malformed case file. It starts
// one supervisor in-process with its own cgroup parent, state directory
// and host uid window, runs every case through the Execute RPC, and
// afterwards checks that the supervisor still answers and that no sandbox
// process, cgroup, mount or state directory remains.
package hostile
