# description: spinning on every core is held to the CPU quota (50% of one
#   core) and ends by the timeout.
# runtime: shell
# limits: cpu_percent=50 timeout_ms=3000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-cpu-max-percent: 70
n=$(nproc)
i=0
while [ $i -lt $((n * 2)) ]; do
  (while :; do :; done) &
  i=$((i + 1))
done
wait
