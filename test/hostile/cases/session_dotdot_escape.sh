# description: in a session sandbox, a path whose ".." climbs above the
#   sandbox's root is refused before anything is resolved, by every file
#   operation, with INVALID_ARGUMENT; ".." that stays inside is resolved
#   lexically.
# session: true
# file: download ../../etc/passwd
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: upload /../etc/evil x
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: stat a/../../../etc/passwd
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: list /workspace/../..
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: mkdir ../../../x
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: remove-recursive ../../..
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: download ../etc/passwd
# expect-file: ok
# expect-content-contains: sandbox:x:1000
