# description: a thread bomb hits the pids limit (threads count), gets
#   "can't start new thread" and ends cleanly on its own.
# runtime: python
# limits: processes=48 timeout_ms=10000
# expect-state: COMPLETED
# expect-reason: EXITED
# expect-stdout-contains: thread limit reached
# expect-stdout-matches: started [1-9][0-9]? threads
# expect-pids-peak-max: 48
import threading

stop = threading.Event()
threads = []
try:
    for _ in range(100000):
        t = threading.Thread(target=stop.wait)
        t.start()
        threads.append(t)
except RuntimeError as e:
    print("thread limit reached:", e)
print("started", len(threads), "threads")
stop.set()
for t in threads:
    t.join()
