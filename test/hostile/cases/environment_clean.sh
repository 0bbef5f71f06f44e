# description: the program's environment holds only the minimal variables
#   (no go-plugin cookies or ports, nothing of the supervisor's host
#   environment such as its PATH under /root), and it cannot read the
#   worker's environment through /proc/1/environ.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: PATH=/usr/local/bin:/usr/bin:/bin
# expect-stdout-not-contains: PLUGIN
# expect-stdout-not-contains: /root
# expect-stdout-not-contains: EXECFARM
# expect-stdout-contains: /proc/1/environ: unreadable
env | sort
tr '\0' '\n' < /proc/1/environ 2>/dev/null || echo "/proc/1/environ: unreadable"
