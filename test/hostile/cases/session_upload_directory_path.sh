# description: in a session sandbox, an upload to a path that names a
#   directory (a trailing "/", or a last element "." or "..") is refused
#   with INVALID_ARGUMENT and creates nothing: it made the file without
#   the slash. The same path without the slash is a file.
# session: true
# file: upload d/f/ x
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: upload d/f/. x
# expect-file: INVALID_ARGUMENT
# --- then ---
# file: stat d/f
# expect-file: ok
# expect-exists: false
# --- then ---
# file: stat d
# expect-file: ok
# expect-exists: false
# --- then ---
# file: upload d/f x
# expect-file: ok
# --- then ---
# file: download d/f
# expect-file: ok
# expect-content-contains: x
