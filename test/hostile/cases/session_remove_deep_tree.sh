# description: in a session sandbox, a recursive remove of a tree 400
#   levels deep (a file at every level) removes it whole, holding at most
#   128 descriptors: it was refused "device or resource busy" past 128
#   levels, leaving the tree.
# session: true
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: made 400
# One mkdir makes the 400 levels; the loop is shell built-ins only (no
# fork per level), so that it stays quick under emulation (the cgroup v2 VM).
cd /workspace && mkdir deep && cd deep && p= && i=0
while [ $i -lt 400 ]; do p=${p}d/; i=$((i+1)); done
mkdir -p "$p" || exit 1
i=0
while [ $i -lt 400 ]; do cd d && : > f && i=$((i+1)) || exit 1; done
echo made $i
# --- then ---
# file: remove-recursive deep
# expect-file: ok
# --- then ---
# file: stat deep
# expect-file: ok
# expect-exists: false
# --- then ---
# file: list .
# expect-file: ok
# expect-content-not-contains: execfarm-remove
