# description: a fork bomb that also writes to stdout and stderr from every
#   process, with a tiny pids limit (16), keeps the worker alive and busy
#   pumping output while the pids cgroup is full: the execution ends by
#   the timeout, never "worker lost" (INTERNAL).
# runtime: python
# limits: processes=16 timeout_ms=2000 output_bytes=64Ki
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-pids-peak-max: 16
# expect-wall-max-ms: 5000
import os, sys

while True:
    try:
        os.fork()
    except OSError as e:
        print("fork failed:", e, flush=True)
        print("fork failed on stderr", file=sys.stderr, flush=True)
