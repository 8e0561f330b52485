#!/usr/bin/env bash
# make bench: installs what the benchmark needs, builds nczarrfs and the
# in-process reader, and runs bench/run.py, which prints the tables and
# writes them into docs/performance.md. Needs root (it drops the page cache)
# and FUSE. BENCH_QUICK=1 for a short run; bench/run.sh --prepare only
# writes and uploads the datasets; see bench/run.py.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --bench
MINIO_BIN=${MINIO_BIN:-$(scripts/install-minio.sh)}
export MINIO_BIN

# Binaries of their own, so that a make build meanwhile does not swap them.
go build -o bin/bench/nczarrfs ./cmd/nczarrfs
go build -o bin/bench/inproc ./bench/inproc
go build -o bin/bench/netem ./internal/cmd/netem
exec /usr/bin/python3 bench/run.py bin/bench/nczarrfs bin/bench/inproc --docs docs/performance.md "$@"
