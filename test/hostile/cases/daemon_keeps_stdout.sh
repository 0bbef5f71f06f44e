# description: a setsid daemon that keeps the program's stdout open must
#   not hold the execution (or its sandbox) beyond the timeout, and must
#   die with it.
# runtime: shell
# limits: timeout_ms=3000
# expect-state: COMPLETED|TIMEOUT
# expect-stdout-contains: parent exits
# expect-wall-max-ms: 6000
setsid sh -c 'while :; do echo tick; sleep 1; done' {{MARKER}} &
echo parent exits
