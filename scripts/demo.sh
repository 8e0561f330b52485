#!/usr/bin/env bash
# Mounts a dataset, shows it with ls, jq and a decoded read, and unmounts.
#   scripts/demo.sh BINARY SOURCE MOUNTPOINT
set -euo pipefail
bin=$1 src=$2 mnt=$3
mkdir -p "$mnt"
"$bin" mount "$src" "$mnt" &
pid=$!
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q " $mnt fuse.nczarrfs " /proc/self/mountinfo && break
  kill -0 $pid 2>/dev/null || { echo "nczarrfs exited before mounting" >&2; exit 1; }
  sleep 0.1
done
show() { printf '\n$ %s\n' "$*"; (cd "$mnt" && eval "$@"); }
show ls -R
show 'jq . .zattrs'
show 'jq -c "{shape, chunks, dtype, fill_value}" temperature/.zarray'
show 'ls -la temperature'
show 'od -A d -t f4 -w20 temperature/data'
show 'od -A d -t d4 surface/level/data'
show 'cat station/data; echo'
fusermount3 -u "$mnt"
wait $pid
trap - EXIT
echo; echo "unmounted $mnt; nczarrfs exited $?"
