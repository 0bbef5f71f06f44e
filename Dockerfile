# syntax=docker/dockerfile:1
# execfarm image: the supervisor, the lean worker, the goja runtime, the node runtime
# bundle. Runs as a privileged DaemonSet (deploy/base); sandboxes need user
# namespaces and cgroups. Sandboxes bind this image's /usr read-only: what
# programs can run is what /usr holds (sh, coreutils, python3, node).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo: the worker empties its capability bounding set in a C constructor,
# before the Go runtime starts threads (worker/bounding_cgo_linux.go), and
# uses libpsx for what is left; a pure-Go worker is correct but pays
# ~10 ms more per sandbox. The runtime image has the same glibc.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/execfarm ./cmd/execfarm-worker ./cmd/execfarm-goja

# The node runtime bundle (@kubernetes/client-node, prometheus-query, uvu),
# from its lock file.
FROM node:24-bookworm-slim AS bundle
WORKDIR /bundle
COPY runtime/node/bundle/package.json runtime/node/bundle/package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

# Node.js 24, an LTS line: Active LTS until October 2026, then Maintenance
# (security fixes) until April 2028. Node 20 reached its end of life in
# April 2026, and Node 22 is in Maintenance only until April 2027; the
# bundle needs >= 20.19, and Debian bookworm's own nodejs is 18. The
# image's Debian (bookworm) is the build stage's, so the cgo binaries find
# the glibc they were linked against.
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && ln -sf /usr/local/bin/node /usr/bin/node
# Outside /usr: sandboxes bind the image's /usr read-only, and the
# supervisor's and worker's binaries have no business there (the goja
# runtime and the node bundle are bound in on purpose, at /.execfarm).
COPY --from=build /out/execfarm /opt/execfarm/bin/execfarm
COPY --from=build /out/execfarm-worker /opt/execfarm/bin/execfarm-worker
COPY --from=build /out/execfarm-goja /opt/execfarm/bin/execfarm-goja
COPY --from=bundle /bundle /opt/execfarm/node-bundle
# The worker and goja binaries are executed by each sandbox's unprivileged
# root and user; execfarm-goja must stay next to execfarm-worker.
RUN chmod 0755 /opt/execfarm /opt/execfarm/bin /opt/execfarm/bin/execfarm /opt/execfarm/bin/execfarm-worker /opt/execfarm/bin/execfarm-goja
ENV SANDBOX_SOCKET_PATH=/run/execfarm/execfarm.sock \
    EXECFARM_NODE_BUNDLE=/opt/execfarm/node-bundle \
    PATH=/opt/execfarm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EXPOSE 50051
# tini is PID 1: it reaps what the kernel hands to PID 1, such as the
# workers of a fork server that died (isolation/forkserver), and forwards
# SIGTERM to the supervisor for its graceful shutdown.
ENTRYPOINT ["/usr/bin/tini", "--", "/opt/execfarm/bin/execfarm"]
CMD ["serve"]
