// Package landlock confines the calling process's file-system access with
// Landlock (Documentation/userspace-api/landlock.rst): after the worker has
// pivoted into the sandbox's root, the sandbox may write only its
// writable directories (/workspace, /tmp, /dev/shm) and devices and may
// read and execute the rest of its root, whatever the mount flags say. On
// Landlock ABI 6 and later it also scopes abstract unix sockets and
// signals to the sandbox's own Landlock domain.
//
// Restrict applies every file-system right the running kernel's ABI
// handles (not go-landlock's best-effort mode) to every thread of the
// process (go-landlock uses libpsx, or LANDLOCK_RESTRICT_SELF_TSYNC on ABI
// 8), and children inherit the domain; it sets no_new_privs. It leaves
// TCP and UDP unrestricted: the network namespace already confines them.
// ABI tells the host probe which version the kernel has; a kernel without
// Landlock yields an error wrapping ErrNotSupported, and the caller, not
// this package, decides whether that is acceptable. Linux only.
package landlock
