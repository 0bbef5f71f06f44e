// Package host is what a supervisor does to the host around its
// sandboxes, at start and for its whole life: the isolation probe and its
// verdict (Check: refuse to start with a required layer missing unless
// the operator allowed it), the host-wide locks that keep two supervisors
// off each other's cgroup parent, uid window (all of it: LockUIDWindow),
// state directory and script cache (Lock), the clean-up of what a crashed
// predecessor left (CleanupStateDir, RemoveStaleEmbedded), and room in the
// host's file table for every sandbox (ReserveFileTable: fs.file-max raised
// so that sandboxes, whose open files their memory bounds, cannot refuse
// files to the host).
//
// Rules a caller keeps: Lock before any clean-up, and hold its locks for
// the supervisor's life; clean up only resources this process locked
// (an embedded supervisor shares the default state directory with a
// running serve, whose live sandboxes a clean-up would destroy). Linux
// only where it unmounts; elsewhere those calls return an error wrapping
// isolation.ErrNotSupported.
package host
