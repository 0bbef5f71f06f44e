# description: in a session sandbox, file operations run in the worker,
#   whose /proc/self is the worker: a path through a /proc magic link
#   (/proc/self/root, /proc/1/root, /proc/self/fd/N, or a link the program
#   plants to one) is refused, read or write, never resolved through the
#   worker's descriptors; nor is anything else of /proc, which the worker
#   reads as the owner of /proc/1 (its memory map).
# session: true
# file: download /proc/self/root/etc/passwd
# expect-file: PERMISSION_DENIED
# --- then ---
# file: download /proc/1/root/etc/passwd
# expect-file: PERMISSION_DENIED
# --- then ---
# file: download /proc/self/fd/0
# expect-file: PERMISSION_DENIED
# --- then ---
# file: upload /proc/self/root/tmp/evil {{MARKER}}
# expect-file: PERMISSION_DENIED
# --- then ---
# file: stat /tmp/evil
# expect-file: ok
# expect-exists: false
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: planted
ln -s /proc/1/root /workspace/r && echo planted
# --- then ---
# file: download r/etc/passwd
# expect-file: PERMISSION_DENIED
# --- then ---
# file: download /proc/1/maps
# expect-file: PERMISSION_DENIED
# --- then ---
# file: list /proc/1
# expect-file: PERMISSION_DENIED
