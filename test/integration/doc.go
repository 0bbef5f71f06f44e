// Package integration tests execfarm end to end on a Linux host as root:
// each test talks to a real supervisor, served in-process on a unix socket
// in a temporary directory, through the generated
// prodisco.sandbox.v1.SandboxService gRPC client, and every execution runs
// in a real sandbox (namespaces, cgroup, seccomp, private root).
//
// Tests skip through one helper, requireSandbox, when the host cannot
// isolate (not root, no user namespaces, a cgroup controller missing), and
// fail when the host probe reports every layer present but the supervisor
// or a first sandbox does not start. The suite uses its own cgroup parent
// (/execfarm-itest-<pid>), state directory and host uid window, checks for
// leaked goroutines and file descriptors in TestMain (internal/leakcheck),
// and removes everything it created.
package integration
