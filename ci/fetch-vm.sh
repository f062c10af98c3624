#!/bin/bash
# Fetches what the QEMU guest tests need into $BNXT_VM_CACHE (default <repo>/.cache/vm), from Debian's
# package registry, without touching the system's apt sources, apt state or dpkg database:
#   - QEMU 11 (Debian sid's qemu-system-x86: the first Debian QEMU with the vfio-user-pci client device)
#     in a private prefix with its own glibc, run through that prefix's ld.so ($BNXT_VM_CACHE/qemu.sh);
#   - the guest kernels: Debian trixie's (6.12) and sid's (7.x) linux-image-amd64, with their modules;
#   - busybox-static, for the initramfs (ci/guest/mkinitramfs.sh);
#   - rdma-core's user space from sid (ibverbs-utils, libibverbs1, ibverbs-providers, libnl) with sid's
#     glibc, for the verbs guest test ($BNXT_VM_CACHE/verbs-root), and sid's perftest with the libraries
#     it loads besides ($BNXT_VM_CACHE/perftest-root);
#   - sid's DPDK: dpdk-testpmd (dpdk-dev) with the librte-* libraries it links (the bnxt PMD among
#     them) and their own dependencies, for the DPDK guest test ($BNXT_VM_CACHE/dpdk-root; glibc,
#     libibverbs and the mlx5 provider come from verbs-root). About 7 MB more to download, 30 MB unpacked.
# Verification: apt checks each signed InRelease against the host's Debian archive keyring and each .deb
# against the SHA256 of the signed package index; this script checks every .deb's SHA256 once more
# against the index before unpacking it. What was fetched is listed in $BNXT_VM_CACHE/manifest.txt.
# About 360 MB on the first run (about 680 MB on disk once unpacked; the .debs are removed after
# unpacking); a re-run reuses everything already there and downloads nothing.
set -euo pipefail
. "$(dirname "$0")/guest/lib.sh"
C=$BNXT_VM_CACHE
mkdir -p "$C"/{apt/lists/partial,apt/state,apt/cache,debs,kernels}
C=$(cd "$C" && pwd)

printf 'deb http://deb.debian.org/debian %s main\n' sid trixie > "$C/apt/sources.list"
[ -f "$C/apt/state/status" ] || : > "$C/apt/state/status"  # empty dpkg status: apt resolves the whole closure
apt_opts=(-o Dir::Etc::SourceList="$C/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o Dir::State="$C/apt/state" -o Dir::State::Lists="$C/apt/lists" -o Dir::State::status="$C/apt/state/status"
  -o Dir::Cache="$C/apt/cache" -o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin
  -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false
  -o APT::Install-Recommends=false -o Debug::NoLocking=1)
apt_update() { echo "fetch-vm: refreshing the package index (trixie, sid)"; apt-get "${apt_opts[@]}" update -qq; }
ls "$C"/apt/lists/*_sid_*Packages* >/dev/null 2>&1 || apt_update
refreshed=0

# fetch_debs SUITE PKG...: downloads PKG/SUITE into debs/ (reusing ones present), checks each against
# the index, and leaves the .deb paths in the array DEBS. On a stale index (a version gone from the
# archive) it refreshes the index once and retries.
fetch_debs() {
  local suite=$1 p file sha; shift
  local -A ver=() arch=() want=()
  read_index() {  # one apt-cache call for all packages: Version, Architecture, SHA256 of each candidate
    local k v a h
    while read -r k v a h; do ver[$k]=$v; arch[$k]=$a; want[$k]=$h; done < <(
      apt-cache "${apt_opts[@]}" show --no-all-versions "${@/%//$suite}" 2>/dev/null | awk '
        /^Package:/{p=$2} /^Version:/{v=$2} /^Architecture:/{a=$2} /^SHA256:/{h=$2}
        /^$/{ if (p != "") print p, v, a, h; p="" } END{ if (p != "") print p, v, a, h }')
  }
  deb_path() { echo "$C/debs/${1}_${ver[$1]//:/%3a}_${arch[$1]}.deb"; }
  read_index "$@"
  for p in "$@"; do
    [ -n "${ver[$p]:-}" ] || die "package $p not found in $suite"
    file=$(deb_path "$p")
    if [ ! -f "$file" ] && ! (cd "$C/debs" && apt-get "${apt_opts[@]}" download "$p/$suite" >/dev/null 2>&1); then
      [ $refreshed = 0 ] || die "could not download $p/$suite"
      apt_update; refreshed=1; read_index "$@"; file=$(deb_path "$p")
      [ -f "$file" ] || (cd "$C/debs" && apt-get "${apt_opts[@]}" download "$p/$suite" >/dev/null) \
        || die "could not download $p/$suite"
    fi
    [ -f "$file" ] || die "apt-get download left no $file"
    sha=$(sha256sum "$file" | cut -d' ' -f1)
    [ "$sha" = "${want[$p]}" ] || { rm -f "$file"; die "$file: SHA256 $sha does not match the index (${want[$p]})"; }
    echo "$p $suite ${ver[$p]} sha256:$sha" >> "$C/manifest.new"
    DEBS+=("$file")
  done
}
: > "$C/manifest.new"

# unpack_into DIR DEB...: extracts the packages into a fresh DIR (built aside, then moved into place, so
# an interrupted run never leaves a half-filled DIR that a later run would take as complete).
unpack_into() {
  local dir=$1; shift
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  local d; for d in "$@"; do dpkg-deb -x "$d" "$dir.tmp"; done
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  rm -f "$@"  # unpacked and listed in the manifest with their SHA256: the .debs are not needed again
}

# --- QEMU: sid's qemu-system-x86 and its library closure (systemd is pulled in only via libibverbs1).
if [ ! -x "$C/qemu.sh" ]; then
  mapfile -t qpkgs < <(apt-get "${apt_opts[@]}" -o APT::Default-Release=sid install -s qemu-system-x86 \
    | awk '/^Inst /{print $2}' | grep -vxE 'systemd|libsystemd-shared')
  [ ${#qpkgs[@]} -gt 0 ] || die "apt resolved no packages for qemu-system-x86"
  DEBS=(); fetch_debs sid "${qpkgs[@]}"
  unpack_into "$C/qemu-root" "${DEBS[@]}"
  cat > "$C/qemu.sh" <<EOS
#!/bin/bash
# Runs the private QEMU with its own ld.so and libraries (written by ci/fetch-vm.sh).
# QEMU_BIN=qemu-img (etc.) runs another binary of the same prefix.
R=$C/qemu-root; L=\$R/usr/lib/x86_64-linux-gnu; BIN=\${QEMU_BIN:-qemu-system-x86_64}
export QEMU_MODULE_DIR=\$L/qemu
FW=(-L \$R/usr/share/qemu -L \$R/usr/share/seabios); case \$BIN in qemu-system-*) ;; *) FW=();; esac
exec \$L/ld-linux-x86-64.so.2 --library-path \$L \$R/usr/bin/\$BIN "\${FW[@]}" "\$@"
EOS
  chmod +x "$C/qemu.sh"
fi
"$C/qemu.sh" -device help 2>/dev/null | grep -q '"vfio-user-pci"' || die "the fetched QEMU has no vfio-user-pci device"

# --- Guest kernels: whatever trixie's and sid's linux-image-amd64 point at now (sid may split the image
# into linux-binary-* and linux-modules-* packages).
kernel_pkg() {
  apt-cache "${apt_opts[@]}" depends "linux-image-amd64/$1" 2>/dev/null \
    | awk '/Depends: linux-(image|binary)-[0-9]/{print $2; exit}'
}
for suite in "${BNXT_GUEST_SUITES[@]}"; do
  pkg=$(kernel_pkg "$suite"); [ -n "$pkg" ] || die "no kernel package found in $suite"
  ver=${pkg#linux-image-}; ver=${ver#linux-binary-}
  dir=$C/kernels/$ver
  if [ ! -d "$dir" ]; then
    mapfile -t parts < <(apt-cache "${apt_opts[@]}" depends "$pkg/$suite" \
      | awk '/Depends: linux-(binary|modules)-/{print $2}' | sort -u)
    DEBS=(); fetch_debs "$suite" "$pkg" "${parts[@]}"
    unpack_into "$dir" "${DEBS[@]}"
  fi
  ln -sfn "$ver" "$C/kernels/$suite"
done

# --- busybox (static), for the initramfs.
if [ ! -x "$C/busybox" ]; then
  DEBS=(); fetch_debs sid busybox-static
  unpack_into "$C/busybox-root" "${DEBS[@]}"
  cp "$C/busybox-root/usr/bin/busybox" "$C/busybox.tmp" && mv "$C/busybox.tmp" "$C/busybox"
fi

# --- rdma-core's user space for the guest's verbs test (guest-test.sh --verbs): ibv_devinfo and
# ibv_rc_pingpong (ibverbs-utils), libibverbs with its netlink libraries, the providers (libbnxt_re
# among them) and sid's glibc, which the initramfs carries with its own ld.so. libibverbs1's dependency
# on systemd (for sysusers) is left out: nothing in the guest runs it.
if [ ! -x "$C/verbs-root/usr/bin/ibv_rc_pingpong" ]; then
  DEBS=(); fetch_debs sid ibverbs-utils ibverbs-providers libibverbs1 libnl-3-200 libnl-route-3-200 libc6
  unpack_into "$C/verbs-root" "${DEBS[@]}"
fi

# --- perftest (ib_send_bw, ib_write_bw, ib_read_bw, ...) for the verbs guest test, with the libraries
# its binaries load beyond verbs-root's: librdmacm, libibumad, libpci (and libpci's libudev and zlib).
# A folder of its own, so that adding it leaves verbs-root as it was.
if [ ! -x "$C/perftest-root/usr/bin/ib_send_bw" ]; then
  DEBS=(); fetch_debs sid perftest librdmacm1t64 libibumad3 libpci3 libudev1 zlib1g
  unpack_into "$C/perftest-root" "${DEBS[@]}"
fi

# --- DPDK for the DPDK guest test (guest-test.sh --dpdk): dpdk-testpmd from dpdk-dev, and exactly the
# libraries its ELF NEEDED entries name (the other PMDs it links among them; mempool_ring is loaded
# by name with -d) with what those load besides, minus what verbs-root has (glibc, libibverbs, libmlx5);
# libgcc_s, which glibc's pthread_cancel loads (EAL cancels its threads at exit).
if [ ! -x "$C/dpdk-root/usr/bin/dpdk-testpmd" ] || [ ! -e "$C/dpdk-root/usr/lib/x86_64-linux-gnu/libgcc_s.so.1" ]; then
  DEBS=(); fetch_debs sid dpdk-dev libgcc-s1 libjansson4 libbsd0 libmd0 libelf1t64 libpcap0.8t64 libdbus-1-3 libsystemd0 \
    libnuma1 libfdt1 zlib1g libzstd1 $(printf 'librte-%s26 ' eal kvargs log telemetry argparse net mbuf mempool \
    ring meter cmdline pci ethdev crypto-scheduler cryptodev rcu bus-vdev reorder security bitratestats metrics \
    bpf gro gso latencystats pdump pcapng net-bnxt bus-pci hash net-i40e net-ixgbe bus-dpaa common-dpaax \
    eventdev timer dmadev mempool-dpaa net-dpaa net-bond sched ip-frag net-iavf net-ice bus-auxiliary \
    mempool-ring) librte-net-mlx5-26 librte-common-mlx5-26
  unpack_into "$C/dpdk-root" "${DEBS[@]}"
fi

# --- The peers guest test (guest-test.sh --peers): iproute2's `rdma` (to add an rdma_rxe link) with
# libmnl and libcap, which it loads, and rdmacm-utils' rping and ucmatose (RDMA CM); iproute2's `ip`
# (the pyverbs suite runs `ip -j`, which busybox lacks) with libselinux and libpcre2, libbpf with
# libelf and libzstd; libgcc-s1, which glibc's pthread_exit loads (rping's threads end with it). A
# folder of its own, so that adding it leaves the others as they were.
if [ ! -f "$C/peers-root/usr/lib/x86_64-linux-gnu/libgcc_s.so.1" ]; then
  DEBS=(); fetch_debs sid iproute2 rdmacm-utils libmnl0 libcap2 libselinux1 libpcre2-8-0 libbpf1 libelf1t64 libzstd1 \
    libgcc-s1
  unpack_into "$C/peers-root" "${DEBS[@]}"
fi

# --- rdma-core's own test suite for the pyverbs guest test (guest-test.sh --pyverbs): python3-pyverbs
# (pyverbs, and the suite under usr/share/doc/rdma-core/tests) with sid's Python 3 and the libraries
# its interpreter and standard modules load (expat, ffi, bz2, lzma, zstd, zlib, OpenSSL, uuid).
# libibverbs, the providers and librdmacm come from verbs-root and perftest-root.
if [ ! -x "$C/pyverbs-root/usr/bin/python3" ]; then
  DEBS=(); fetch_debs sid python3-pyverbs python3 python3-minimal python3.14 python3.14-minimal libpython3.14 \
    libpython3.14-minimal libpython3.14-stdlib libpython3-stdlib libexpat1 libffi8 libbz2-1.0 liblzma5 libzstd1 \
    zlib1g libssl3t64 libuuid1 media-types netbase
  unpack_into "$C/pyverbs-root" "${DEBS[@]}"
fi

# The manifest lists what this run fetched or checked; a run that fetched nothing keeps the old one.
if [ -s "$C/manifest.new" ]; then
  touch "$C/manifest.txt"; sort -u "$C/manifest.new" "$C/manifest.txt" > "$C/manifest.tmp"
  mv "$C/manifest.tmp" "$C/manifest.txt"
fi
rm -f "$C/manifest.new"

echo "fetch-vm: cache $C"
echo "fetch-vm: $("$C/qemu.sh" --version | head -1)"
for s in "${BNXT_GUEST_SUITES[@]}"; do
  read -r k m < <(kernel_paths "$s")
  echo "fetch-vm: kernel $s $(basename "$m") ($k)"
done
