#!/usr/bin/env bash
# install-zarrita.sh installs zarrita, the Zarr v3 implementation that
# test/fixtures/gen_v3.mjs writes and reads the v3 fixtures with, at the
# versions test/fixtures/package-lock.json pins, into the project's cache:
# ${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}/node/node_modules. A stamp of
# the lock file's hash skips the install when it is current.
#
# Prints the node_modules folder on stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}
dir=$cache/node
stamp=$(cat "$root/test/fixtures/package.json" "$root/test/fixtures/package-lock.json" | sha256sum | cut -c1-32)

# Test packages run in parallel and may call this at once: one at a time.
mkdir -p "$cache"
exec 9>"$cache/node.lock"
flock 9

if [[ -f $dir/stamp && $(<"$dir/stamp") == "$stamp" && -d $dir/node_modules/zarrita ]]; then
	echo "$dir/node_modules"
	exit 0
fi

command -v npm >/dev/null || { echo "install-zarrita: npm is not installed (apt-get install npm)" >&2; exit 1; }
echo "install-zarrita: npm ci into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
cp "$root/test/fixtures/package.json" "$root/test/fixtures/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
echo "$stamp" >"$dir/stamp"
echo "$dir/node_modules"
