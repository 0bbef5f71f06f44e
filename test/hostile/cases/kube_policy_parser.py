# description: requests that slipped past a hand-written path parser are
#   refused by the Kubernetes proxy's policy (get, list in namespace
#   default): a doubled slash that parsed as resource "" (an upstream that
#   merges slashes then served kube-system's secrets) is 400, a legacy
#   watch path that parsed as a get of a resource named "watch" is 403 as
#   the watch it is, and none of them reaches the API server (checked on
#   the fake API server after the run).
# setup: host-proxy
# runtime: python
# limits: timeout_ms=20000
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^/api/v1//namespaces/kube-system/secrets: 400$
# expect-stdout-matches: (?m)^/api/v1/watch/namespaces/default/pods: 403$
# expect-stdout-matches: (?m)^/api/v1/namespaces/default/pods\?watch=1: 403$
# expect-stdout-matches: (?m)^/api/v1/namespaces/kube-system/secrets: 403$
# expect-stdout-matches: (?m)^/api/v1/namespaces/default/pods/x/proxy/: 400$
# expect-stdout-matches: (?m)^/api/v1/namespaces/default/pods: 200$
import http.client

for path in ["/api/v1//namespaces/kube-system/secrets",
             "/api/v1/watch/namespaces/default/pods",
             "/api/v1/namespaces/default/pods?watch=1",
             "/api/v1/namespaces/kube-system/secrets",
             "/api/v1/namespaces/default/pods/x/proxy/",
             "/api/v1/namespaces/default/pods"]:
    c = http.client.HTTPConnection("127.0.0.1", 8001, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    print(f"{path}: {r.status}")
