#!/usr/bin/env bash
# Run .ci/run as CI does: on a clean clone of a commit, in a fresh Debian 12
# root made by debootstrap (nothing installed but the minimal base), as root,
# with no standard input and CI=true.  A green run here shows that .ci/run
# installs everything it needs, which a run on the development machine,
# where the packages are already there, cannot show.
#
# Usage (as root): scripts/ci-fresh.sh [COMMIT (HEAD)] [WORK_DIR (/var/tmp/libram-ci)]
#
# Needs debootstrap and network access to Debian's archive.  The base root
# is made once under WORK_DIR/base and copied for every run (WORK_DIR/root),
# so each run starts from the same fresh system.  The log is WORK_DIR/ci.log;
# the exit status is .ci/run's.
set -euo pipefail
commit=${1:-HEAD}
work=${2:-/var/tmp/libram-ci}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "ci-fresh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (chroot and debootstrap need it)"
command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap)"
# safe.directory: root running on a checkout another user owns.
git() { command git -c safe.directory='*' "$@"; }
sha=$(git -C "$repo" rev-parse --verify "$commit^{commit}") || die "no commit $commit"

mkdir -p "$work"
# Made in base.tmp and renamed only when debootstrap succeeded: an
# interrupted one is never taken for a finished base.
if [ ! -d "$work/base" ]; then
    echo "ci-fresh: making the base root in $work/base (once)"
    rm -rf --one-file-system "$work/base.tmp"
    debootstrap --variant=minbase bookworm "$work/base.tmp" http://deb.debian.org/debian \
        >"$work/debootstrap.log" 2>&1 || die "debootstrap failed: see $work/debootstrap.log"
    mv "$work/base.tmp" "$work/base"
fi

root="$work/root"
cleanup() {
    for m in dev/pts dev proc sys; do umount -l "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup
# Never delete through a mount left behind (the host's /dev, say).
if findmnt -rn -o TARGET | grep -q "^$root/"; then die "mounts remain under $root: umount them first"; fi
rm -rf --one-file-system "$root"
cp -a "$work/base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-hardlinks "$repo" "$root/repo"
git -C "$root/repo" fetch -q origin "$sha" 2>/dev/null || true # a commit no branch holds
git -C "$root/repo" checkout -q "$sha"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"

echo "ci-fresh: .ci/run on $sha in a fresh root; log: $work/ci.log"
start=$(date +%s)
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin CI=true \
    bash -c 'cd /repo && .ci/run' </dev/null >"$work/ci.log" 2>&1
rc=$?
set -e
echo "ci-fresh: rc=$rc in $(($(date +%s) - start)) s ($sha)"
exit $rc
