# description: a program (and its child) ignoring SIGTERM, SIGINT and
#   SIGHUP still ends at the timeout: the cgroup is killed with SIGKILL.
# runtime: shell
# limits: timeout_ms=1500
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stdout-contains: ignoring
# expect-wall-max-ms: 5000
trap '' TERM INT HUP
sh -c "trap '' TERM INT HUP; while :; do sleep 1; done" {{MARKER}} &
echo ignoring TERM INT HUP
while :; do sleep 1; done
