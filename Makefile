# execfarm — conventional targets: build, test, bench, proto, lint.
# Everything runs as root on Linux (sandboxes need namespaces and cgroups).

GO            ?= go
BIN           := bin
TOOLS         := $(CURDIR)/.tools
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
STATICCHECK_VERSION        := v0.8.2
PRODISCO_PROTO := prodisco_sandbox.proto
PRODISCO_PB    := github.com/execfarm/execfarm/test/compat/prodiscopb
# The Python SDK's generated modules: messages from protoc itself, service
# stubs from Debian's protobuf-compiler-grpc (grpc_python_plugin 1.51, the
# version of Debian's python3-grpcio), imports rewritten into the package.
PY_PB          := sdk/python/src/execfarm/_pb
# protoc itself comes from Debian's protobuf-compiler (3.21.12 on bookworm);
# its version is written into the generated files, so drift shows up too.

.PHONY: all build demo test test-go test-python test-typescript test-cgroup2 deps bundle bench proto proto-check lint clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The README's main command: run examples/hello.ts in a fresh sandbox
# (an embedded supervisor starts when none is configured).
demo: build
	$(BIN)/execfarm run --verbose examples/hello.ts

# The README's test command: installs what the tests need, then runs every
# test (unit, integration, hostile, compatibility, the client libraries)
# and the race detector on the supervisor and worker packages. A package's tests may take up to
# 30 minutes (go test's default is 10): the compatibility suite takes
# about 2 minutes on a quiet 2-core machine and 10 at a load of 20.
test: test-go test-python test-typescript

test-go: deps
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 30m -race ./supervisor/... ./worker/... ./runtime/...

# The TypeScript SDK's tests (node's test runner through tsx) against a
# real `execfarm serve` that they start from bin/execfarm; and npm pack.
test-typescript: build deps
	cd sdk/typescript && EXECFARM_BIN=$(CURDIR)/$(BIN)/execfarm npm test

# The Python SDK (sdk/python): built into a wheel, installed from it into a
# fresh venv of Debian's /usr/bin/python3 (its python3-grpcio and
# python3-protobuf, no PyPI), its tests run there against a real
# `execfarm serve`, and the README's snippet run from the installed wheel.
test-python: build
	sdk/python/test.sh

# The cgroup package's tests, the integration suite and the hostile suite
# on a real, pure cgroup v2 kernel: Debian's kernel booted in qemu (TCG),
# this host's root shared read-only, one run per deployment scenario
# (test/cgroup2/README.md). Needs qemu-system-x86, linux-image-amd64,
# busybox-static and cpio.
test-cgroup2: bundle
	test/cgroup2/run.sh

# What the tests need from npm: the node runtime bundle, the Node.js
# client of the compatibility test (test/compat) and the TypeScript SDK's
# dependencies (sdk/typescript).
deps: bundle
	@command -v node >/dev/null || { echo "node is required (apt-get install nodejs)"; exit 1; }
	@[ -d test/compat/node_modules ] || npm ci --prefix test/compat --no-audit --no-fund --ignore-scripts
	@[ -d sdk/typescript/node_modules ] || npm ci --prefix sdk/typescript --no-audit --no-fund --ignore-scripts

# The node runtime's bundle (@kubernetes/client-node, prometheus-query, uvu),
# mounted read-only into sandboxes at /.execfarm/node.
bundle:
	@[ -d runtime/node/bundle/node_modules ] || npm ci --prefix runtime/node/bundle --no-audit --no-fund --ignore-scripts

bench: build
	@# The baseline of the bwrap table (BenchmarkVersusBwrap): Debian's bubblewrap.
	@command -v bwrap >/dev/null || apt-get install -y -qq bubblewrap >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } || \
		{ echo "make bench needs bubblewrap (apt-get install bubblewrap)"; exit 1; }
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -timeout 30m ./test/bench/

$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

proto: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc
	@command -v protoc >/dev/null || { echo "protoc is required (apt-get install protobuf-compiler)"; exit 1; }
	PATH=$(TOOLS):$$PATH protoc -I proto \
		--go_out=. --go_opt=module=github.com/execfarm/execfarm \
		--go-grpc_out=. --go-grpc_opt=module=github.com/execfarm/execfarm \
		proto/prodisco/sandbox/v1/sandbox.proto proto/execfarm/worker/v1/worker.proto \
		proto/execfarm/v1/session.proto
	# ProDisco's proto as published, for test/compat/prodisco's client: a
	# package of its own, never linked with proto/sandboxv1 (same names).
	PATH=$(TOOLS):$$PATH protoc -I test/compat \
		--go_out=. --go_opt=module=github.com/execfarm/execfarm --go_opt=M$(PRODISCO_PROTO)=$(PRODISCO_PB) \
		--go-grpc_out=. --go-grpc_opt=module=github.com/execfarm/execfarm --go-grpc_opt=M$(PRODISCO_PROTO)=$(PRODISCO_PB) \
		test/compat/$(PRODISCO_PROTO)
	@command -v grpc_python_plugin >/dev/null || { echo "grpc_python_plugin is required (apt-get install protobuf-compiler-grpc)"; exit 1; }
	rm -rf $(PY_PB)/prodisco $(PY_PB)/execfarm
	protoc -I proto --python_out=$(PY_PB) --pyi_out=$(PY_PB) \
		--grpc_out=$(PY_PB) --plugin=protoc-gen-grpc=$$(command -v grpc_python_plugin) \
		proto/prodisco/sandbox/v1/sandbox.proto proto/execfarm/v1/session.proto
	sed -i -E 's/^from (prodisco|execfarm)\./from execfarm._pb.\1./' $$(find $(PY_PB) -name '*.py' -o -name '*.pyi')
	find $(PY_PB) -type d -exec touch {}/__init__.py \;
	# The TypeScript SDK's stubs (ts-proto, pinned in its package-lock.json).
	@[ -x sdk/typescript/node_modules/.bin/protoc-gen-ts_proto ] || npm ci --prefix sdk/typescript --no-audit --no-fund --ignore-scripts
	rm -rf sdk/typescript/src/gen
	mkdir -p sdk/typescript/src/gen
	protoc -I proto -I sdk/typescript/proto \
		--plugin=protoc-gen-ts_proto=sdk/typescript/node_modules/.bin/protoc-gen-ts_proto \
		--ts_proto_out=sdk/typescript/src/gen \
		--ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,env=node,forceLong=number,useExactTypes=false \
		proto/prodisco/sandbox/v1/sandbox.proto proto/execfarm/v1/session.proto \
		sdk/typescript/proto/google/rpc/status.proto sdk/typescript/proto/google/rpc/error_details.proto

# Fails when the checked-in generated code differs from a fresh `make proto`.
proto-check: proto
	git diff --exit-code -- proto/ test/compat/prodiscopb/ $(PY_PB)/ sdk/typescript/src/gen/
	@untracked=$$(git ls-files --others --exclude-standard -- $(PY_PB) sdk/typescript/src/gen/); [ -z "$$untracked" ] || { echo "generated but not checked in:"; echo "$$untracked"; exit 1; }

lint: $(TOOLS)/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(TOOLS)/staticcheck ./...

clean:
	rm -rf $(BIN)
