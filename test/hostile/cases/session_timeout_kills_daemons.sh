# description: in a session sandbox, an exec's timeout kills its whole
#   process tree through the exec's own cgroup, daemons that double-forked
#   and called setsid included, while a daemon left by an earlier exec
#   that ended by itself keeps running: the sandbox and its other
#   processes are untouched.
# session: true
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: keeper started
setsid sh -c 'sleep 1000; :' {{MARKER}}-keeper > /dev/null 2>&1 < /dev/null &
echo keeper started
# --- then ---
# runtime: shell
# limits: timeout_ms=2000
# expect-state: TIMEOUT
# expect-stdout-contains: victims before: 3
M={{MARKER}}  # grep patterns below are written not to match their own command line
(setsid sh -c 'sleep 1000; :' $M-victim > /dev/null 2>&1 < /dev/null &)
setsid sh -c 'sleep 1000; :' $M-victim > /dev/null 2>&1 < /dev/null &
sh -c 'sleep 1000; :' $M-victim &
until [ "$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -c -- "$M-victi[m]")" = 3 ]; do sleep 0.05; done
echo "victims before: 3"
sleep 1000
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: victims: 0
# expect-stdout-contains: keepers: 1
M={{MARKER}}  # grep patterns below are written not to match their own command line
echo "victims: $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -c -- "$M-victi[m]")"
echo "keepers: $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -c -- "$M-keepe[r]")"
