// Package rootfs builds a sandbox's private root filesystem from inside the
// sandbox's user and mount namespaces, and pivots into it.
//
// The order is DESIGN.md's: make "/" rprivate, mount a small tmpfs as the
// new root, bind the host's /usr (and /lib*, /bin, /sbin as symlinks on
// merged-/usr hosts) read-only with nosuid,nodev, write a minimal /etc,
// mount a fresh /proc with sensitive entries masked, a minimal /dev,
// size-limited tmpfs for /tmp, /dev/shm and the workspace, pivot_root into
// the new root, detach the old one, and remount the root read-only.
//
// Setup must run in the worker before any untrusted code, in a process
// that owns its mount namespace (CLONE_NEWUSER|CLONE_NEWNS). It changes the
// root and working directory of the calling process. Linux only.
package rootfs
