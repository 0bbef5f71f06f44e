# syntax=docker/dockerfile:1
# execfarm image: the supervisor and the lean worker. Runs as a privileged
# DaemonSet (deploy/base); sandboxes need user namespaces and cgroups.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ ./cmd/execfarm ./cmd/execfarm-worker

FROM debian:bookworm-slim
# python3 for the python runtime; nothing else runs in sandboxes but what
# /usr provides (sandboxes bind the host image's /usr read-only).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/execfarm /usr/local/bin/execfarm
COPY --from=build /out/execfarm-worker /usr/local/bin/execfarm-worker
# The worker binary is executed by each sandbox's unprivileged root.
RUN chmod 0755 /usr/local/bin/execfarm /usr/local/bin/execfarm-worker
ENV SANDBOX_SOCKET_PATH=/run/execfarm/execfarm.sock
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/execfarm"]
CMD ["serve"]
