#!/usr/bin/env bash
# install-azurite.sh installs Azurite, Microsoft's Azure Storage emulator
# that the Azure tests run against (internal/azuritetest), at a pinned
# version from the npm registry, into the project's cache:
# ${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}/azurite. A marker file records
# the version; the install is skipped when it is current.
#
# Prints the path of the blob server's command (azurite-blob) on stdout;
# progress goes to stderr.
set -euo pipefail

AZURITE_VERSION=3.37.0

cache=${NCZARRFS_CACHE:-$HOME/.cache/nczarrfs}
dir=$cache/azurite
bin=$dir/node_modules/.bin/azurite-blob

# Test packages run in parallel and may call this at once: one at a time.
mkdir -p "$cache"
exec 9>"$cache/azurite.lock"
flock 9

if [[ -x $bin && -f $dir/version && $(<"$dir/version") == "$AZURITE_VERSION" ]]; then
	echo "$bin"
	exit 0
fi

command -v npm >/dev/null || { echo "install-azurite: npm is not installed (apt-get install npm)" >&2; exit 1; }
echo "install-azurite: npm install azurite@$AZURITE_VERSION into $dir" >&2
# Install beside, then move into place, so that a failed install never
# leaves a half-written tree under the cached name.
tmp=$(mktemp -d "$cache/azurite.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm init -y >/dev/null &&
	npm install --no-audit --no-fund --loglevel=error --save-exact "azurite@$AZURITE_VERSION" >&2)
echo "$AZURITE_VERSION" >"$tmp/version"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "$bin"
