#!/usr/bin/env bash
# A fleet reading one model through a shared cache tier: N daemons behind
# the S3-shaped link, with and without --shared-cache, staggered and all
# at once, in one run (scripts/link/fleet.py says what is measured). Needs
# root (a network namespace and tc), nginx and curl. Flags go to fleet.py:
#
#   --nodes 6 --model-mib 512 --stagger-s 3 --cache-mib 128
#   --link-mbs 100 --conn-mbs 12.5 --delay-ms 30   the origin's link
#
#   ZTFS  the binary to measure (default: a release build made here)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $(id -u) != 0 ]]; then
    echo "bench-fleet.sh: needs root (a network namespace, a veth pair, tc)" >&2
    exit 2
fi
bash "$repo/scripts/apt-need.sh" bench-fleet.sh nginx=nginx-light curl=curl tc=iproute2
venv=$(bash "$repo/scripts/venv.sh")
ztfs=${ZTFS:-}
if [[ -z $ztfs ]]; then
    (cd "$repo" && cargo build --release --bin ztfs >&2)
    ztfs=${CARGO_TARGET_DIR:-$repo/target}/release/ztfs
fi
exec "$venv/bin/python" "$repo/scripts/link/fleet.py" --ztfs "$ztfs" --weed "$venv/bin/weed" "$@"
