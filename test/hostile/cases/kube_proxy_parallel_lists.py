# description: 60 parallel pod lists through the Kubernetes proxy from
#   one sandbox, answered slowly (200 ms each): each arrives whole, while
#   the API server never has more than 8 of this sandbox's requests in
#   flight (the supervisor's per-sandbox bound: it once read 60 whole
#   bodies at once, 4.5 GB of RSS); the rest wait in the sandbox's own
#   worker. The supervisor holds at most one 32 KiB chunk per request.
# setup: host-proxy
# runtime: python
# limits: timeout_ms=60000
# expect-state: COMPLETED
# expect-stdout-contains: lists: 60 complete of 60
import http.client, threading

N, SIZE = 60, 64 << 10
done, bad = [], []
lock = threading.Lock()

def fetch(i):
    try:
        c = http.client.HTTPConnection("127.0.0.1", 8001, timeout=50)
        c.request("GET", "/api/v1/namespaces/default/pods?labelSelector=big%3D{{MARKER}}")
        r = c.getresponse()
        n, last = 0, b""
        while True:
            b = r.read(65536)
            if not b:
                break
            n += len(b)
            last = (last + b)[-4:]
        with lock:
            (done if r.status == 200 and n == SIZE and last == b'"}]}' else bad).append((i, r.status, n))
    except Exception as e:
        with lock:
            bad.append((i, repr(e)))

threads = [threading.Thread(target=fetch, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"lists: {len(done)} complete of {N}")
for b in bad[:5]:
    print("bad:", b)
