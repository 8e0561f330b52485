#!/usr/bin/env bash
# Installs what nczarrfs needs to build, run and test on a fresh Debian
# machine: FUSE, the reference tools that write test fixtures, jq, and the
# Go modules. Packages already installed are left alone.
#
#   scripts/install-deps.sh          # everything for the tests
#   scripts/install-deps.sh --run    # only what the demo needs
#   scripts/install-deps.sh --bench  # the demo's and make bench's (zarr-python, boto3, rclone)
set -euo pipefail

run_only=false
[[ ${1:-} == --run || ${1:-} == --bench ]] && run_only=true

packages=(fuse3 jq)
if ! $run_only; then
  packages+=(netcdf-bin python3-zarr python3-numcodecs python3-xarray python3-netcdf4 python3-h5py hdf5-filter-plugin zip python3-crc32c python3-msgpack)
  # zarrita, the Zarr v3 reference (scripts/install-zarrita.sh), runs on
  # Node.js. A machine may have it from elsewhere than Debian (NodeSource's
  # nodejs bundles npm and conflicts with Debian's npm package).
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
  packages+=(gdal-bin attr) # gdalinfo and gdal_translate open data.vrt; getfattr shows the xattrs
  packages+=(gcc gfortran) # docs/guide.md reads data from C and Fortran, and its test runs them
  packages+=(python3-matplotlib chromium) # preview.png is checked against matplotlib's viridis; index.html opened in headless Chromium
  packages+=(git-annex) # a dataset kept as links out of its folder (--follow-links)
  packages+=(python3-scipy cdo nco ncview xvfb x11-utils imagemagick) # dataset.nc read by scipy, CDO, NCO and ncview (under Xvfb: xwininfo, import)
  packages+=(buildah ca-certificates) # make image; the image's test runs its binary in a chroot
fi
[[ ${1:-} == --bench ]] && packages+=(python3-zarr python3-numcodecs python3-boto3 rclone)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  echo "installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The minimum Go is go.mod's go line (README.md, docs/install.md).
go_min=$(awk '$1 == "go" { print $2; exit }' "$(dirname "$0")/../go.mod")
command -v go >/dev/null || { echo "Go $go_min or newer is needed and not installed: https://go.dev/dl/" >&2; exit 1; }
go_have=$(go env GOVERSION)
go_have=${go_have#go}
if [[ $(printf '%s\n%s\n' "$go_min" "${go_have%%[ -]*}" | sort -V | head -1) != "$go_min" ]]; then
  echo "Go $go_min or newer is needed; $(command -v go) is go$go_have: https://go.dev/dl/" >&2
  exit 1
fi
go mod download
$run_only || "$(dirname "$0")/install-zarrita.sh" >/dev/null
