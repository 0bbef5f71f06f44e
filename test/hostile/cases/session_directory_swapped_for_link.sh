# description: in a session sandbox, a directory that the program replaces
#   by a symbolic link between two file operations is resolved afresh,
#   inside the sandbox's root: a link to /etc cannot be written through
#   (read-only), and a link to the host marker file's directory leads to
#   nothing (the sandbox has no such directory).
# session: true
# setup: host-marker-file
# file: mkdir d
# expect-file: ok
# --- then ---
# file: upload d/x first
# expect-file: ok
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: swapped
rm -r /workspace/d && ln -s /etc /workspace/d && echo swapped
# --- then ---
# file: upload d/y {{MARKER}}
# expect-file: PERMISSION_DENIED
# --- then ---
# file: download d/passwd
# expect-file: ok
# expect-content-contains: sandbox:x:1000
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: swapped again
rm /workspace/d && ln -s "$(dirname {{HOST_MARKER_PATH}})" /workspace/d && echo swapped again
# --- then ---
# file: download d/{{HOST_MARKER_NAME}}
# expect-file: NOT_FOUND
# --- then ---
# file: upload d/{{HOST_MARKER_NAME}} {{MARKER}}
# expect-file: FAILED_PRECONDITION
# --- then ---
# file: remove-recursive d
# expect-file: ok
# --- then ---
# file: stat /etc/passwd
# expect-file: ok
# expect-exists: true
