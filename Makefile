# protomcp's development tasks. buf, protoc-gen-go and staticcheck are Go tools of tools/go.mod,
# so nothing needs installing beyond Go.

GO ?= go
# buf is built from tools/go.mod on its first use, which takes minutes with no output (bufcheck
# says so first). BUF overrides it with a prebuilt buf of the same version, the fast path:
#   make generate BUF='npx --yes @bufbuild/buf@$(BUF_VERSION)'
BUF_GOTOOL := $(GO) tool -modfile=tools/go.mod buf
BUF ?= $(BUF_GOTOOL)
BUF_VERSION := $(shell awk '$$1 == "github.com/bufbuild/buf" { print substr($$2, 2) }' tools/go.mod)
DEMO_ADDR ?= 127.0.0.1:0

.PHONY: all
all: generate lint test

# bin/protoc-gen-mcp is built before buf generate: buf.gen.yaml's clean: true empties gen/,
# which the plugin imports.
.PHONY: generate
generate: bufcheck
	$(GO) build -o bin/protoc-gen-mcp ./cmd/protoc-gen-mcp
	$(BUF) generate
	$(BUF) generate --template grpcmcp/buf.gen.yaml
	$(BUF) generate --template connectmcp/buf.gen.yaml
	$(BUF) generate --template examples/library/buf.gen.yaml
	$(MAKE) testimage

# The image that the plugin's golden tests read: every module of the workspace, with comments.
.PHONY: testimage
testimage: bufcheck
	$(BUF) build -o cmd/protoc-gen-mcp/testdata/image.binpb --as-file-descriptor-set

# Rewrites the plugin's golden files; review the diff.
.PHONY: golden
golden: testimage
	$(GO) test ./cmd/protoc-gen-mcp -run 'TestGolden' -update

.PHONY: test
# The connection reuse tests make 10,000 calls only without -race (1,000 with it), so they run
# a second time without it, with the allocation-count tests, which are exact only without it.
# otelmcp/ is its own module (OpenTelemetry stays out of go.mod), and otelmcp/examples another
# (the exporters stay out of otelmcp's), so ./... reaches neither; otelmcp's tests build and run
# otelmcp/examples. interop/gosdk is a module too (the official Go SDK stays out of go.mod): both
# eras against it, both ways. redis/ is a module (go-redis stays out of go.mod): its replica-set
# test starts its own redis-server, which .ci/run installs. grpcmcp/ and connectmcp/ are modules
# (grpc-go and connect-go stay out of go.mod, and out of each other's); examples/library is one
# too (SQLite, connect-go and grpc-go for its tests' clients), whose tests run its binary.
test:
	$(GO) test -race ./...
	$(GO) test -run '^TestConnectionReuse|^TestObservingInterceptorCostsNoAllocation|^TestServerEchoAllocations|^TestClientEchoAllocations' ./examples/weather ./runtime
	cd otelmcp && $(GO) test -race ./...
	cd interop/gosdk && $(GO) test -race ./...
	cd redis && $(GO) test -race ./...
	cd grpcmcp && $(GO) test -race ./...
	cd connectmcp && $(GO) test -race ./...
	cd examples/library && $(GO) test -race ./...

.PHONY: lint
lint: bufcheck
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool -modfile=tools/go.mod staticcheck ./...
	cd otelmcp && $(GO) vet ./...
	cd otelmcp/examples && $(GO) vet ./...
	cd interop/gosdk && $(GO) vet ./...
	cd redis && $(GO) vet ./...
	cd grpcmcp && $(GO) vet ./... && $(GO) tool -modfile=../tools/go.mod staticcheck ./...
	cd connectmcp && $(GO) vet ./... && $(GO) tool -modfile=../tools/go.mod staticcheck ./...
	cd examples/library && $(GO) vet ./... && $(GO) tool -modfile=../../tools/go.mod staticcheck ./...
	$(BUF) lint
	$(BUF) lint grpcmcp
	$(BUF) lint connectmcp
	$(BUF) lint examples/library
	$(MAKE) lintcontract

# The examples' MCP surface (docs/contract.md), from the manifests protoc-gen-mcp writes
# into gen/: protomcp lint on each example (protomcp.json says which rules are off, and why;
# the conformance and contract services exist to exercise the protocol and every proto type,
# so only the rules that are not a provider's apply to them), then protomcp breaking against
# the manifests of BREAKING_AGAINST (the previous commit: in CI's fresh clone, the change
# under test). When that commit is not in the clone (a shallow clone, or the first commit)
# or has no manifests, the comparison is skipped with a note: it cannot fail for want of a
# baseline.
BREAKING_AGAINST ?= HEAD~1
CONTRACT_MANIFESTS := gen/weather gen/conformance gen/contract examples/library/gen
.PHONY: lintcontract
lintcontract:
	$(GO) build -o bin/protomcp ./cmd/protomcp
	bin/protomcp lint gen/weather
	bin/protomcp lint --provider none gen/conformance
	bin/protomcp lint --provider none gen/contract
	bin/protomcp lint examples/library/gen
	@if ! git rev-parse -q --verify '$(BREAKING_AGAINST)^{commit}' >/dev/null; then \
		echo "protomcp breaking: $(BREAKING_AGAINST) is not in this clone (shallow, or the first commit): not compared"; \
		exit 0; \
	fi; \
	old=$$(mktemp -d); trap 'rm -rf $$old' EXIT; \
	for d in $(CONTRACT_MANIFESTS); do \
		if git cat-file -e '$(BREAKING_AGAINST)':$$d 2>/dev/null; then \
			git archive '$(BREAKING_AGAINST)' $$d | tar -x -C $$old || exit 1; \
		fi; \
		if [ -z "$$(find $$old/$$d -name '*.mcp.json' 2>/dev/null)" ]; then \
			echo "protomcp breaking: $(BREAKING_AGAINST) has no manifests in $$d: not compared"; continue; \
		fi; \
		echo "bin/protomcp breaking $(BREAKING_AGAINST):$$d $$d"; \
		bin/protomcp breaking --old-name $(BREAKING_AGAINST) $$old/$$d $$d || exit 1; \
	done

# Says so before a go tool buf that is not in the Go build cache yet: its build compiles
# hundreds of packages for a few minutes and prints nothing. go build -n lists a compile only
# for a package the cache does not hold.
.PHONY: bufcheck
bufcheck:
	@if [ "$(BUF)" = "$(BUF_GOTOOL)" ] && $(GO) build -n -modfile=tools/go.mod -o /dev/null github.com/bufbuild/buf/cmd/buf 2>&1 | grep -q '/compile -o'; then \
		echo "building buf $(BUF_VERSION) from tools/go.mod: the first build takes a few minutes and prints nothing;"; \
		echo "for a prebuilt buf instead, run: make $(or $(MAKECMDGOALS),all) BUF='npx --yes @bufbuild/buf@$(BUF_VERSION)'"; \
	fi

# Fails when the generated code or the test image is stale.
.PHONY: checkgenerate
checkgenerate: generate
	git diff --exit-code -- gen cmd/protoc-gen-mcp/testdata grpcmcp/internal/gen connectmcp/internal/gen examples/library/gen
	@untracked=$$(git ls-files --others --exclude-standard -- gen cmd/protoc-gen-mcp/testdata grpcmcp/internal/gen connectmcp/internal/gen examples/library/gen); \
	if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

# Builds the weather example, serves it in the background on a free port (DEMO_ADDR), runs its
# client against the URL the server logs once it listens, and exits with the client's status.
.PHONY: demo
demo:
	$(GO) build -o bin/weather-server ./examples/weather/server
	$(GO) build -o bin/weather-client ./examples/weather/client
	@log=$$(mktemp); \
	bin/weather-server -addr $(DEMO_ADDR) 2>$$log & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -f $$log' EXIT; \
	url=; for i in $$(seq 1 100); do \
		url=$$(sed -n 's/.*msg="serving MCP" url=\([^ ]*\).*/\1/p' $$log); \
		if [ -n "$$url" ]; then break; fi; \
		if ! kill -0 $$pid 2>/dev/null; then echo "weather-server exited:"; cat $$log; exit 1; fi; \
		sleep 0.1; \
	done; \
	if [ -z "$$url" ]; then echo "weather-server did not start:"; cat $$log; exit 1; fi; \
	echo "weather-server is serving $$url"; \
	bin/weather-client -url $$url

# Runs the official MCP conformance suite (pinned in scripts/conformance/) against the
# conformance example's server and client; fails unless every scenario passes with no warning.
.PHONY: conformance
conformance:
	scripts/conformance.sh

# Side-by-side benchmarks: protomcp against the official go-sdk, mcp-go and a plain net/http
# floor (bench/ is its own module, so the peers stay out of go.mod), plus the runtime's per-call
# testing.B benchmarks, in 5 interleaved rounds. Prints one markdown table; about eight minutes on 2 cores.
# BENCHFLAGS passes flags to benchrun, e.g. BENCHFLAGS='-json /tmp/runs.json -rounds 7'.
.PHONY: bench
bench:
	cd bench && $(GO) run ./cmd/benchrun $(BENCHFLAGS)

# Runs the load test for $(SOAK) (64 callers, mixed tools, 10% aborted) and prints calls,
# errors, p50/p99 latency, goroutines and heap before and after.
SOAK ?= 5m
.PHONY: soak
soak:
	PROTOMCP_SOAK=$(SOAK) $(GO) test -race -count=1 -run '^TestLoad$$' -v -timeout 0 ./runtime

.PHONY: clean
clean:
	rm -rf bin
