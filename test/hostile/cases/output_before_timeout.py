# description: what a python program printed before its timeout is kept:
#   its stdout and stderr are pipes, which python block-buffers unless it
#   runs unbuffered, and the timeout kills it (SIGKILL through the cgroup)
#   with no chance to flush.
# runtime: python
# limits: timeout_ms=1500
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stdout-matches: (?m)^printed before the timeout$
# expect-stdout-contains: and a partial line
# expect-stderr-contains: written to stderr before the timeout
import sys, time
print("printed before the timeout")
sys.stdout.write("and a partial line")
sys.stderr.write("written to stderr before the timeout")
time.sleep(60)
