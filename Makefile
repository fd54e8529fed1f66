# raftmq — the two commands are `make run` and `make test`.
# Everything the targets need beyond Go is installed by the targets
# themselves into ./bin (staticcheck) or the Go module cache — and, for the
# dashboard's browser tests, Debian's chromium package (`make chromium`).

GO          ?= go
BIN         := $(CURDIR)/bin
RAFTMQ      := $(BIN)/raftmq
STATICCHECK := $(BIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X github.com/raftmq/raftmq/cli.Version=$(VERSION)
DATA        ?= $(CURDIR)/data
FUZZTIME    ?= 2m

.PHONY: all build run test unit integration lint fmt-check vet staticcheck \
        bench chaos fuzz docker compose-up compose-down clean chromium

all: build

## build: the static raftmq binary in ./bin
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(RAFTMQ) ./cmd/raftmq

## run: start a local cluster (name server + one 3-node group) on loopback
run: build
	$(RAFTMQ) dev --data $(DATA)

## test: lint, unit tests (with the race detector) and integration tests;
## the dashboard's browser tests need chromium, which `chromium` installs.
## Their screenshots are kept in ./artifacts.
ARTIFACTS ?= $(CURDIR)/artifacts
test: lint chromium unit integration

## chromium: Debian's headless browser for the dashboard tests (apt-get, root)
chromium:
	command -v chromium || (apt-get update && apt-get install -y chromium)

# -p 1: packages run one at a time. Their cluster tests pick free loopback
# ports by binding port 0 and releasing it; two packages doing that at
# once can be handed the same port and cross-talk.
unit:
	RAFTMQ_REQUIRE_CHROMIUM=1 RAFTMQ_ARTIFACTS=$(ARTIFACTS) $(GO) test -race -count=1 -p 1 -timeout 12m ./...

integration:
	cd integration && $(GO) test -count=1 -timeout 10m ./...

## lint: gofmt, go vet and staticcheck over both modules
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd integration && $(GO) vet ./...

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...
	cd integration && $(STATICCHECK) ./...

## bench: the cluster benchmark — a 3-node SYNC_FLUSH group on loopback against
## NATS JetStream (../shared/bench/peer-nats.sh always), ours, theirs and the
## ratio per workload (scripts/bench.sh; PROFILE=1, SCALING=1, OUT=dir)
bench: build
	RAFTMQ=$(RAFTMQ) bash scripts/bench.sh

## bench-go: Go benchmarks of the hot paths, with allocations
.PHONY: bench-go
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

## chaos: the long randomized fault schedules — CHAOS_RUNS (default 200) runs of
## dledger's in-process one (CHAOS_STEPS, default 30, steps each; lines in
## CHAOS_DLEDGER_OUT), then CHAOS_RUNS runs of the container suite (Docker, root),
## one JSON line each appended to CHAOS_OUT (a failed run's container logs go
## to CHAOS_LOGS); `make chaos-table` prints the container runs' tables
CHAOS_RUNS  ?= 200
CHAOS_STEPS ?= 30
CHAOS_OUT   ?= $(CURDIR)/chaos-runs.jsonl
CHAOS_DLEDGER_OUT ?= $(CURDIR)/chaos-dledger-runs.jsonl
CHAOS_LOGS  ?= $(CURDIR)/chaos-logs
chaos:
	RAFTMQ_CHAOS=1 RAFTMQ_CHAOS_RUNS=$(CHAOS_RUNS) RAFTMQ_CHAOS_STEPS=$(CHAOS_STEPS) \
	  RAFTMQ_CHAOS_OUT=$(CHAOS_DLEDGER_OUT) $(GO) test -count=1 -timeout 0 -run 'TestChaos$$' ./dledger/
	mkdir -p $(CHAOS_LOGS)
	cd integration && CHAOS_RUNS=$(CHAOS_RUNS) CHAOS_OUT=$(CHAOS_OUT) CHAOS_LOGS=$(CHAOS_LOGS) \
	  $(GO) test -count=1 -timeout 0 -run TestContainerChaos -v ./chaos/

## chaos-table: the Markdown tables of the runs in CHAOS_OUT (docs/RELIABILITY.md)
.PHONY: chaos-table
chaos-table:
	cd integration && $(GO) run ./chaos/cmd/chaostable $(CHAOS_OUT)

## fuzz: run every fuzz target for FUZZTIME (default 2m) each
fuzz:
	@for pkg in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./integration/' | xargs -n1 dirname | sort -u); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -parallel 1 || exit 1; \
	  done; \
	done

## compose-up: name server + a 3-node group in containers (PROFILE=two-groups adds broker-b)
COMPOSE := docker-compose -f deploy/compose.yaml -p raftmq $(if $(PROFILE),--profile $(PROFILE))
compose-up: build
	docker build -q -t raftmq:compose -f deploy/Dockerfile .
	$(COMPOSE) up -d
	bash scripts/compose-wait.sh
	@echo "send:    $(COMPOSE) run --rm namesrv send --namesrv namesrv:9876 --topic TopicTest --body hello --count 3"
	@echo "consume: $(COMPOSE) run --rm namesrv consume --namesrv namesrv:9876 --topic TopicTest --group demo --from first --count 3"
	@echo "status:  $(COMPOSE) run --rm namesrv cluster status --namesrv namesrv:9876"

## compose-down: stop the containers and delete their volumes
compose-down:
	$(COMPOSE) --profile two-groups down -v

## docker: the FROM-scratch image of the static binary
docker: build
	docker build -t raftmq:$(VERSION) -f deploy/Dockerfile .

clean:
	rm -rf $(BIN) $(DATA) $(ARTIFACTS)
