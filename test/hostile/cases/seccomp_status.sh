# description: the program runs under the sandbox's seccomp filter and
#   no_new_privs: /proc/self/status shows Seccomp 2 (filter mode) with at
#   least one filter, and NoNewPrivs 1, for the shell and for what it
#   executes.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^NoNewPrivs:\s+1$
# expect-stdout-matches: (?m)^Seccomp:\s+2$
# expect-stdout-matches: (?m)^Seccomp_filters:\s+[1-9][0-9]*$
# expect-stdout-not-contains: Seccomp:	0
grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status
