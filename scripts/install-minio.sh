#!/usr/bin/env bash
# install-minio.sh builds the MinIO server the S3 tests run against and puts
# it in the project's cache: ${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}/bin/minio.
#
# MinIO publishes no semver tags, so the pin is a Go pseudo-version (a commit
# on MinIO's master branch) fetched through the Go module proxy with
# `go install`. A marker file next to the binary records the version; the build
# is skipped when the pinned version is already installed.
#
# Prints the path of the binary on stdout; progress goes to stderr.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

cache=${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}
bin=$cache/bin
marker=$bin/minio.version

if [[ -x $bin/minio && -f $marker && $(<"$marker") == "$MINIO_VERSION" ]]; then
	echo "$bin/minio"
	exit 0
fi

mkdir -p "$bin"
echo "install-minio: building github.com/minio/minio@$MINIO_VERSION (takes a few minutes)" >&2
start=$SECONDS
# Build in a scratch GOBIN so a failed build never leaves a half-written
# binary under the cached name. GOFLAGS is cleared so a project-level
# -mod=vendor or similar cannot leak into a module-mode install.
# go prints one "go: downloading" line per module (about 240 for MinIO) and
# has no flag to quiet them: they go to a log, shown only if the build fails.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$cache/minio-build.log
if ! GOBIN=$tmp GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
	go install "github.com/minio/minio@$MINIO_VERSION" >"$log" 2>&1; then
	cat "$log" >&2
	echo "install-minio: go install failed (log: $log)" >&2
	exit 1
fi
mv -f "$tmp/minio" "$bin/minio"
echo "$MINIO_VERSION" >"$marker"
echo "install-minio: done in $((SECONDS - start))s, $(grep -c '^go: downloading' "$log") modules downloaded (log: $log)" >&2
echo "$bin/minio"
