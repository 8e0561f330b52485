# nczarrfs: the two commands a newcomer needs are `make demo` and `make test`.

GO      ?= go
BIN     ?= bin/nczarrfs
SAMPLE  := examples/sample.zip
MNT     ?= /tmp/nczarrfs-demo
PREFIX  ?= /usr/local
# mount(8) looks for its helper mount.fuse.nczarrfs in /sbin (docs/install.md).
SBINDIR ?= /sbin
# --version shows this, the module version and the commit.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
# -buildvcs=auto overrides a GOFLAGS=-buildvcs=false, so that Go records the commit.
GOBUILD  = $(GO) build -buildvcs=auto -ldflags "-X main.version=$(VERSION)"

.PHONY: all build deps demo test vet fuzz clean install uninstall

all: build

build:
	$(GOBUILD) -o $(BIN) ./cmd/nczarrfs

# The binary in $(PREFIX)/bin, and the link mount(8) runs for
# "mount -t fuse.nczarrfs" and fstab entries (docs/install.md).
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/nczarrfs
	install -d $(DESTDIR)$(SBINDIR)
	ln -sfn $(PREFIX)/bin/nczarrfs $(DESTDIR)$(SBINDIR)/mount.fuse.nczarrfs

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/nczarrfs $(DESTDIR)$(SBINDIR)/mount.fuse.nczarrfs

deps:
	scripts/install-deps.sh
	scripts/install-minio.sh

# Mount the bundled sample dataset, show it, unmount.
demo:
	scripts/install-deps.sh --run
	$(GOBUILD) -o $(BIN) ./cmd/nczarrfs
	scripts/demo.sh $(BIN) $(SAMPLE) $(MNT)

# staticcheck at a pinned version (2026.2.2), built and cached by go run.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Runs of every fuzz target (seeds plus 100,000 executions each).
fuzz:
	scripts/fuzz.sh 100000x

# Everything CI runs: install, vet, a short run of every fuzz target, then
# all tests under the race detector.
test: deps vet
	scripts/fuzz.sh 10000x
	NCZARRFS_REQUIRE_ALL=1 $(GO) test -race -count=1 -timeout 30m ./...

# The long runs of docs/reliability.md, not part of make test: the soak (32
# readers through a mount over MinIO for $(SOAK), every byte checked, the
# daemon's goroutines and RSS watched, then SIGTERM under load) and 10% of
# S3 requests failing at random for $(FAULTS), on loopback and 20 ms away
# (16 readers, every codec: no EIO, no short read, no wrong byte).
SOAK   ?= 10m
FAULTS ?= 5m
.PHONY: soak
soak: deps
	NCZARRFS_REQUIRE_ALL=1 NCZARRFS_SOAK=$(SOAK) NCZARRFS_FAULTS=$(FAULTS) $(GO) test -race -count=1 -timeout 90m -v -run '^(TestSoak|TestS3MountRandomFaults|TestS3MountRandomFaultsFar)$$' ./test/

# The throughput and scale figures of docs/performance.md, measured side by
# side with zarr-python (bench/run.py); not part of make test. Needs root (it
# drops the page cache) and FUSE. BENCH_QUICK=1 for a short run with small
# arrays, BENCH_RUNS=n for n runs per figure (default 5).
.PHONY: bench
bench:
	bench/run.sh

clean:
	rm -rf bin
