# description: the program holds no capability at all, not even in its
#   bounding set, so nothing it executes can regain one (the worker drops
#   the bounding set before starting it).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: CapInh:	0000000000000000
# expect-stdout-contains: CapPrm:	0000000000000000
# expect-stdout-contains: CapEff:	0000000000000000
# expect-stdout-contains: CapBnd:	0000000000000000
# expect-stdout-contains: CapAmb:	0000000000000000
grep Cap /proc/self/status
