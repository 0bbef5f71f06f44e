# description: a classic fork bomb stays inside its pids limit, ends by the
#   wall-clock timeout, and every one of its processes dies with the
#   sandbox. The sandbox's own processes (the worker) share the pids
#   limit, so the worker must survive a full pids cgroup: an execution
#   lost to "worker lost" (INTERNAL) fails the case.
# runtime: shell
# limits: processes=64 timeout_ms=3000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-pids-peak-max: 64
# expect-wall-max-ms: 6000
# The main shell waits on a FIFO (no fork needed) while the bomb runs.
mkfifo /tmp/wait && exec 3<>/tmp/wait || exit 1
# The main shell forks once: started as `bomb` it would fork each side
# of the pipeline itself, and the first side can fill the pids cgroup
# before the second fork ("Cannot fork" ends the main shell, exit 2).
bomb() { bomb | bomb & }
bomb &
read never <&3
