#!/usr/bin/env bash
# Regenerates sample.zip from sample.cdl with Debian's netcdf-bin (ncgen
# writes NCZarr) and zips the tree the way netcdf-c does: under one folder.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ncgen -4 -lb -o "file://$tmp/sample.file#mode=nczarr,file" sample.cdl
rm -f sample.zip
(cd "$tmp" && zip -qrX "$OLDPWD/sample.zip" sample.file)
