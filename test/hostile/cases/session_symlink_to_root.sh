# description: in a session sandbox, `ln -s / root` planted by the program
#   leads no file operation out of the sandbox: root/etc/shadow does not
#   exist (the sandbox has none), root/etc/passwd is the sandbox's own, the
#   host marker file cannot be read through the link, and nothing can be
#   written through it into the sandbox's read-only root.
# session: true
# setup: host-marker-file
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: planted
ln -s / /workspace/root && echo planted
# --- then ---
# file: download root/etc/shadow
# expect-file: NOT_FOUND
# --- then ---
# file: download root/etc/passwd
# expect-file: ok
# expect-content-contains: sandbox:x:1000
# expect-content-not-contains: daemon:x:
# --- then ---
# file: download root{{HOST_MARKER_PATH}}
# expect-file: NOT_FOUND
# --- then ---
# file: download root/workspace/root/workspace/root/etc/passwd
# expect-file: ok
# expect-content-contains: sandbox:x:1000
# --- then ---
# file: upload root/etc/evil {{MARKER}}
# expect-file: PERMISSION_DENIED
# --- then ---
# file: upload root/usr/bin/evil {{MARKER}}
# expect-file: PERMISSION_DENIED
# --- then ---
# file: stat root/etc/evil
# expect-file: ok
# expect-exists: false
# --- then ---
# file: list root/etc
# expect-file: ok
# expect-content-contains: passwd file
# expect-content-not-contains: shadow
