# description: `kill -9 -1` and `kill -9 1` from the program reach only the
#   program's own processes (Linux spares the caller of kill -1), never the
#   sandbox's init (the worker) or the host; the execution completes.
# runtime: shell
# limits: timeout_ms=10000
# expect-state: COMPLETED
# expect-reason: EXITED
# expect-stdout-contains: kill 1 refused
# expect-stdout-contains: after kill -1
# expect-stdout-contains: background sleep status 137
sleep 30 &
bg=$!
kill -9 1 2>/dev/null && echo "kill 1 ALLOWED" || echo "kill 1 refused"
kill -9 -1
echo "after kill -1"
wait $bg
echo "background sleep status $?"
