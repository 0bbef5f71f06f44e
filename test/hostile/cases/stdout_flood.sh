# description: `yes` floods stdout until the timeout; the supervisor keeps
#   only head and tail of the per-stream limit and flags the truncation.
# runtime: shell
# limits: output_bytes=64Ki timeout_ms=2000
# expect-state: TIMEOUT
# expect-reason: TIMEOUT
# expect-stdout-truncated: true
# expect-stderr-truncated: false
# expect-stdout-contains: y
# expect-stdout-max-bytes: 66560
yes
