# description: a program sleeping past its timeout ends TIMEOUT close to
#   the timeout, not when the sleep would end.
# runtime: shell
# limits: timeout_ms=1000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stdout-contains: going to sleep
# expect-stdout-not-contains: woke up
# expect-wall-max-ms: 4000
echo going to sleep
sleep 60
echo woke up
