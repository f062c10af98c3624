#!/bin/bash
# usage: ci/guest/mkinitramfs.sh SUITE OUT.cpio.gz [SRC:DEST ...]
# Builds the guest-test initramfs for SUITE's kernel (trixie | sid, fetched by ci/fetch-vm.sh): busybox,
# ci/guest/init as /init, and bnxt_en, bnxt_re, ib_core and ib_uverbs with everything they depend on,
# laid out under /lib/modules/<version>/ with a modules.dep so that the guest's `modprobe` works.
# SRC:DEST pairs add host files (DEST relative to the initramfs root); a SRC folder is copied whole,
# its symbolic links as they are.
# Env: GUEST_MODULES overrides the module list (default "bnxt_en bnxt_re ib_core ib_uverbs");
#      GUEST_INIT another /init (default ci/guest/init).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
[ $# -ge 2 ] || die "usage: $0 SUITE OUT.cpio.gz [SRC:DEST ...]"
suite=$1 out=$2; shift 2
read -r _vmlinuz moddir < <(kernel_paths "$suite")
ver=$(basename "$moddir")
[ -x "$BNXT_VM_CACHE/busybox" ] || die "no busybox in $BNXT_VM_CACHE: run ci/fetch-vm.sh first"
read -r -a mods <<< "${GUEST_MODULES:-bnxt_en bnxt_re ib_core ib_uverbs}"

root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,proc,sys,dev,tmp,lib/modules/"$ver"}
cp "$BNXT_VM_CACHE/busybox" "$root/bin/busybox"
cp "${GUEST_INIT:-$here/init}" "$root/init"; chmod 755 "$root/init"

# The modules, uncompressed, at their usual paths, and a modules.dep for them.
mapfile -t rels < <(python3 "$here/modules.py" closure "$moddir" "${mods[@]}")
for rel in "${rels[@]}"; do
  dst=$root/lib/modules/$ver/${rel%%.ko*}.ko
  mkdir -p "$(dirname "$dst")"
  case $rel in
    *.xz) xz -dc "$moddir/$rel" ;;
    *.zst) zstd -qdc "$moddir/$rel" ;;
    *.gz) gzip -dc "$moddir/$rel" ;;
    *) cat "$moddir/$rel" ;;
  esac > "$dst"
done
python3 "$here/modules.py" depmod "$moddir" "${mods[@]}" > "$root/lib/modules/$ver/modules.dep"

for pair in "$@"; do
  src=${pair%%:*} dst=${pair#*:}
  if [ -d "$src" ]; then mkdir -p "$root/$dst"; cp -a "$src/." "$root/$dst/"; continue; fi
  mkdir -p "$root/$(dirname "$dst")"; cp -L "$src" "$root/$dst"
done

mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | "$BNXT_VM_CACHE/busybox" cpio -o -H newc 2>/dev/null) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
echo "initramfs $out ($suite, $ver): $(du -h "$out" | cut -f1), modules: $(for r in "${rels[@]}"; do basename "${r%%.ko*}"; done | tr '\n' ' ')"
