# description: what a shell program wrote before its timeout is kept,
#   a line without its newline included.
# runtime: shell
# limits: timeout_ms=1500
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stdout-matches: (?m)^echoed before the timeout$
# expect-stdout-contains: and a partial line
# expect-stderr-contains: written to stderr before the timeout
echo "echoed before the timeout"
printf 'and a partial line'
printf 'written to stderr before the timeout' >&2
sleep 60
