#!/usr/bin/env bash
# Runs every fuzz target in the module for a short time each: $1 (default 5s).
set -euo pipefail
t=${1:-5s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $f ($t)"
    go test -run='^$' -fuzz="^$f\$" -fuzztime="$t" "$pkg" >/tmp/nczarrfs-fuzz.log 2>&1 || { cat /tmp/nczarrfs-fuzz.log; exit 1; }
  done
done
