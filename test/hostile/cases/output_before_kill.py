# description: what a python program printed before it was killed is kept:
#   here it SIGKILLs itself, so nothing flushes its buffers on the way out.
# runtime: python
# expect-state: FAILED
# expect-reason: SIGNAL
# expect-signal: 9
# expect-stdout-matches: (?m)^printed before the kill$
# expect-stderr-contains: written to stderr before the kill
import os, signal, sys
print("printed before the kill")
sys.stderr.write("written to stderr before the kill")
os.kill(os.getpid(), signal.SIGKILL)
