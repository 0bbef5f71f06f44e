# description: the sandbox has its own UTS namespace: its hostname is
#   "sandbox", and neither hostname(1) nor sethostname/setdomainname from
#   the program changes it (uid 1000 without CAP_SYS_ADMIN).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: hostname: sandbox
# expect-stdout-contains: sethostname: refused
# expect-stdout-contains: after: sandbox
echo "hostname: $(uname -n)"
hostname evil 2>/dev/null && echo "sethostname: ALLOWED" || echo "sethostname: refused"
echo "after: $(uname -n)"
