// Package session holds session sandboxes: sandboxes kept alive across
// many execs and file operations until they are deleted or expire (the
// Kubernetes agent-sandbox model), each with an ordered event log read by
// offset or followed live (sandbox-agent's), each belonging to the
// principal that created it.
//
// A Manager owns them. The mechanism (start a sandbox, run a program in
// it beside others, move files in and out, kill, destroy) is a Backend's:
// SandboxBackend drives supervisor/sandbox; tests use fakes. An exec is an
// execution like any other: the Runner (supervisor/execution) admits it
// through the scheduler, records it in the registry, enforces its
// timeout and CPU time (the exec's processes' alone, Box.ExecCPU), and
// classifies its end; the session gives the run
// its sandbox through a Placement that keeps the sandbox afterwards, and
// hears the run's life through an Observer, which logs it.
//
// A sandbox's life:
//
//	Create ──▶ reserve (--max-sandboxes, per principal, lifetime ceiling: *QuotaError)
//	           Backend.Start (cgroup, worker, uid range)          failed ─▶ error
//	           log: ready; lifetime timer; idle timer
//	  ready ─┬─ Exec: reserve a place (MaxExecs) ─▶ Runner.SubmitIn
//	         │        Created: log exec_started ─▶ output: log exec_output ...
//	         │        Finished: log exec_ended, place back, activity
//	         ├─ Upload/Download/ListFiles/Stat/Remove/Mkdir: paths resolved
//	         │        (ResolvePath), activity; log file_written/removed, directory_made
//	         └─ ReadEvents/Subscribe (also for Config.EndedRetention after the end)
//	  end  ◀── Delete | lifetime | idle timeout | Shutdown
//	           refuse new work; log expiring (lifetime, idle)
//	           cancel every exec held; Box.Kill (every process)
//	           wait until every exec has published its result (CANCELLED)
//	           Box.Close (cgroup, mounts, host directory, uid range)
//	           log ended (reason, cancelled execs); close the log; quota freed
//
// Nothing of a sandbox survives the supervisor: Shutdown ends them all,
// and a restarted supervisor has none (at its start, supervisor/host
// removes what a crashed one left).
//
// Ownership: every lookup compares the caller's principal with the
// sandbox's owner and answers ErrNotFound when they differ, exactly as
// for an unknown id. One exception widens it for a principal over its
// own clients (principal.Principal.Client): a caller that is a principal
// itself, with no client, also lists, reads the status of and deletes
// the sandboxes of its clients (Manager.Oversee), so that a client that
// is gone cannot leave sandboxes its holder cannot end; execs, files and
// events stay the owner's alone, and a client sees nothing but its own. Errors are sentinels and typed errors (errors.go);
// the supervisor maps them to gRPC statuses.
package session
