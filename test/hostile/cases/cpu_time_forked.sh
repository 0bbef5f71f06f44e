# description: the CPU-time limit counts the whole sandbox, not one process:
#   four forked spinners share a 1000 ms budget (a per-process RLIMIT_CPU
#   would give each its own) and the execution ends with reason CPU_TIME
#   long before the wall-clock timeout.
# runtime: shell
# limits: cpu_time_ms=1000 timeout_ms=20000
# expect-state: FAILED
# expect-reason: CPU_TIME
# expect-wall-max-ms: 8000
for i in 1 2 3 4; do
  (while :; do :; done) &
done
wait
