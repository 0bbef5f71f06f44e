# description: a python fork bomb (every process forks forever, ignoring
#   failures) with a small pids limit ends by the timeout, not by losing
#   the worker (INTERNAL), and leaves no process behind.
# runtime: python
# limits: processes=32 timeout_ms=3000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-pids-peak-max: 32
# expect-wall-max-ms: 6000
import os, sys

sys.argv[0] = "{{MARKER}}"
while True:
    try:
        os.fork()
    except OSError:
        pass
