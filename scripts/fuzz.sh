#!/usr/bin/env bash
# Runs every fuzz target in the module for a fixed number of executions each:
# $1 (default 10000x). The budget is a count, not a duration: Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a
# duration budget ends while a worker is mid-call (golang/go#75804); a count
# has no deadline to race.
set -euo pipefail
n=${1:-10000x}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f ($n)"
    go test -run='^$' -fuzz="^$f\$" -fuzztime="$n" "$pkg" >"$log" 2>&1 || { cat "$log"; exit 1; }
  done
done
