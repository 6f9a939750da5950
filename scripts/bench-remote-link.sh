#!/usr/bin/env bash
# Models in object storage through a link with the shape of S3: ztfs
# against rclone, s3fs, curl and the link's own limit, in one run
# (scripts/link/bench.py says what is measured and how). Needs root (a
# network namespace and tc), nginx, curl, and installs rclone and s3fs
# from Debian when missing. Flags go to bench.py:
#
#   --link-mbs 400 --conn-mbs 50 --delay-ms 30   the link's shape (defaults)
#   --big-mib 1024 --tensors 300                 the sizes read
#   --peers rclone,s3fs  --no-sweep  --max-cpu 80  --reps 3 (medians)
#
#   ZTFS  the binary to measure (default: a release build made here)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $(id -u) != 0 ]]; then
    echo "bench-remote-link.sh: needs root (a network namespace, a veth pair, tc)" >&2
    exit 2
fi
bash "$repo/scripts/apt-need.sh" bench-remote-link.sh rclone=rclone s3fs=s3fs nginx=nginx-light \
    curl=curl tc=iproute2
venv=$(bash "$repo/scripts/venv.sh")
ztfs=${ZTFS:-}
if [[ -z $ztfs ]]; then
    (cd "$repo" && cargo build --release --bin ztfs >&2)
    ztfs=${CARGO_TARGET_DIR:-$repo/target}/release/ztfs
fi
ZTFS_WEED=$venv/bin/weed exec "$venv/bin/python" "$repo/scripts/link/bench.py" --ztfs "$ztfs" "$@"
