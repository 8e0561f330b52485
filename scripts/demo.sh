#!/usr/bin/env bash
# Mounts a dataset, shows it with ls, jq and a decoded read, and unmounts.
# The mountpoint folder is removed afterwards if this script made it.
#   scripts/demo.sh BINARY SOURCE MOUNTPOINT
set -euo pipefail
bin=$1 src=$2 mnt=$3
made=false
if [[ ! -e $mnt ]]; then
  mkdir -p "$mnt"
  made=true
fi
cleanup() {
  if grep -q " $mnt fuse.nczarrfs " /proc/self/mountinfo; then
    "$bin" unmount "$mnt" || true
  fi
  if $made; then rmdir "$mnt" 2>/dev/null || true; fi
}
trap cleanup EXIT
# --daemon returns once the mount is up; its exit status says whether it is.
"$bin" mount --daemon "$src" "$mnt"
show() { printf '\n$ %s\n' "$*"; (cd "$mnt" && eval "$@"); }
show ls -AR
show 'jq . .zattrs'
show 'jq -c "{shape, chunks, dtype, fill_value}" temperature/.zarray'
show 'ls -la temperature'
show 'od -A d -t f4 -w20 temperature/data'
show 'od -A d -t d4 surface/level/data'
show 'cat station/data; echo'
printf '\n$ nczarrfs unmount %s\n' "$mnt"
"$bin" unmount "$mnt"
cleanup
trap - EXIT
echo "unmounted $mnt"
