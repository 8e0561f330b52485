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
# CGO_ENABLED=0: the code is pure Go, so the binary is static and runs on any
# Linux of its architecture, and in a FROM scratch image (Containerfile).
GOBUILD  = CGO_ENABLED=0 $(GO) build -buildvcs=auto -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
# make dist: one archive per target, with SHA-256 sums, in $(DIST).
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64
# make image: the container image of the Containerfile, built with podman or buildah.
IMAGE     ?= localhost/nczarrfs:$(VERSION)

.PHONY: all build deps demo test vet fuzz clean install uninstall dist image

all: build

build:
	$(GOBUILD) -o $(BIN) ./cmd/nczarrfs

# The binary in $(PREFIX)/bin, and the link mount(8) runs for
# "mount -t fuse.nczarrfs" and fstab entries (docs/install.md).
# A user who cannot write $(SBINDIR) (not root) gets the binary and is told
# the command that adds the link, instead of a failure.
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/nczarrfs
	@if install -d $(DESTDIR)$(SBINDIR) 2>/dev/null && test -w $(DESTDIR)$(SBINDIR); then \
		echo "ln -sfn $(PREFIX)/bin/nczarrfs $(DESTDIR)$(SBINDIR)/mount.fuse.nczarrfs"; \
		ln -sfn $(PREFIX)/bin/nczarrfs $(DESTDIR)$(SBINDIR)/mount.fuse.nczarrfs; \
	else \
		echo "installed $(DESTDIR)$(PREFIX)/bin/nczarrfs; $(DESTDIR)$(SBINDIR) is not writable, so the mount(8) helper is not linked."; \
		echo "nczarrfs mount works as it is; for mount -t fuse.nczarrfs and /etc/fstab, as root:"; \
		echo "  ln -sfn $(PREFIX)/bin/nczarrfs $(SBINDIR)/mount.fuse.nczarrfs"; \
	fi

# Release archives: nczarrfs-$(VERSION)-linux-ARCH.tar.gz, each with the
# static binary, README.md and docs/install.md, and SHA256SUMS beside them.
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=nczarrfs-$(VERSION)-$$os-$$arch; \
		mkdir -p $(DIST)/$$name; \
		GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $(DIST)/$$name/nczarrfs ./cmd/nczarrfs; \
		cp README.md docs/install.md $(DIST)/$$name/; \
		tar -C $(DIST) --owner=0 --group=0 --sort=name -czf $(DIST)/$$name.tar.gz $$name; \
		rm -rf $(DIST)/$$name; \
	done
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

# The image: the static binary and CA certificates on scratch. The
# Containerfile copies both from bin/: the binary of make build and this
# machine's CA bundle (package ca-certificates), so that nothing is pulled.
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image: build
	install -m 0644 $(CA_BUNDLE) bin/ca-certificates.crt
	@if command -v podman >/dev/null; then tool=podman; \
	elif command -v buildah >/dev/null; then tool=buildah; \
	else echo "make image needs podman or buildah (apt-get install buildah)" >&2; exit 1; fi; \
	echo "$$tool build -t $(IMAGE) -f Containerfile ."; \
	$$tool build $(IMAGE_FLAGS) -t $(IMAGE) -f Containerfile .

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/nczarrfs $(DESTDIR)$(SBINDIR)/mount.fuse.nczarrfs

deps:
	scripts/install-deps.sh
	scripts/install-minio.sh
	scripts/install-azurite.sh

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
# all tests under the race detector. The end-to-end package takes about 22
# minutes on a quiet 2-core machine; the timeout leaves room for a slow
# machine while keeping the whole run inside CI's 90 minutes (a run once
# died at a 30m timeout with no other failure).
test: deps vet
	scripts/fuzz.sh 10000x
	NCZARRFS_REQUIRE_ALL=1 $(GO) test -race -count=1 -timeout 60m ./...

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
	rm -rf bin $(DIST)
