#!/usr/bin/env bash
# Installs with apt-get the Debian packages of the commands missing here,
# saying which, for a script that needs them (run as root).
#
#   bash scripts/apt-need.sh WHO COMMAND=PACKAGE ...
set -euo pipefail

who=$1
shift
missing=()
for need in "$@"; do
    command -v "${need%%=*}" >/dev/null || missing+=("${need#*=}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "$who: installing ${missing[*]}" >&2
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
