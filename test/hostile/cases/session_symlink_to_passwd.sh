# description: in a session sandbox, `ln -s /etc/passwd p` planted by the
#   program: a download of p reads the sandbox's own /etc/passwd, never the
#   host's; an upload to p replaces the link with a new file and never
#   writes through it.
# session: true
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: planted
ln -s /etc/passwd /workspace/p && echo planted
# --- then ---
# file: download p
# expect-file: ok
# expect-content-contains: sandbox:x:1000
# expect-content-not-contains: daemon:x:
# --- then ---
# file: stat p
# expect-file: ok
# expect-exists: true
# expect-content-contains: symlink 0777 /etc/passwd
# --- then ---
# file: upload p {{MARKER}}
# expect-file: ok
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: p is a file: {{MARKER}}
# expect-stdout-contains: sandbox passwd intact: 1
# expect-stdout-not-contains: {{MARKER}}passwd
[ -f p ] && [ ! -L p ] && echo "p is a file: $(cat p)"
echo "sandbox passwd intact: $(grep -c '^sandbox:x:1000' /etc/passwd)"
grep -l '{{MARKER}}' /etc/passwd && echo "{{MARKER}}passwd"
true
