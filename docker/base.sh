#!/usr/bin/env bash
# The base image the Dockerfile starts from when no registry can be reached:
# Debian bookworm (minbase) made by debootstrap and imported into podman as
# localhost/pg_ask-base:bookworm. Kept once made; its .debs are kept in /var/cache/pg_ask/docker.
#   bash docker/base.sh [IMAGE]
set -euo pipefail
IMAGE=${1:-localhost/pg_ask-base:bookworm}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$(cd "$(dirname "$0")" && pwd)/containers.conf}
if podman image exists "$IMAGE"; then echo "== $IMAGE present"; exit 0; fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
echo "== making $IMAGE with debootstrap (a few minutes, once)"
root=$(mktemp -d /var/tmp/pg_ask-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p /var/cache/pg_ask/docker/debs
debootstrap --variant=minbase --cache-dir=/var/cache/pg_ask/docker/debs bookworm "$root" http://deb.debian.org/debian >/dev/null
cat >"$root/etc/apt/sources.list" <<SRC
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SRC
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" --numeric-owner -c . | podman import \
  --change 'CMD ["/bin/bash"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$IMAGE" >/dev/null
echo "== $IMAGE made"
