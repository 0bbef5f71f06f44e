# description: `yes` floods stderr until the timeout; stderr is truncated on
#   its own and stdout keeps its small output.
# runtime: shell
# limits: output_bytes=64Ki timeout_ms=2000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stderr-truncated: true
# expect-stdout-truncated: false
# expect-stdout-contains: before the flood
# expect-stderr-max-bytes: 66560
echo before the flood
yes 1>&2
