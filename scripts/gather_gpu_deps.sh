#!/usr/bin/env bash
# Gathers, on a Debian 12 machine with a package registry, every library dtwin needs that a GPU
# machine without one lacks (yaml-cpp, fmt, SimGrid and its dependencies, CLI11, nlohmann-json,
# SentencePiece, Catch2, and Gloo's headers for ProcessGroupGloo.hpp), as .deb files, and
# unpacks them into a prefix that travels to the GPU machine. LibTorch (with CUDA, NCCL and Gloo), CUDA, cmake and the C/C++ runtime come from the
# GPU machine itself, so libc, libstdc++, libgcc and the compiler's packages are left out.
#
# Usage: scripts/gather_gpu_deps.sh [PREFIX]      (default: gpu-deps/, ignored by git)
# On the GPU machine (README, "GPU build"):
#   export CMAKE_PREFIX_PATH="$PWD/gpu-deps/usr"
#   cmake -S . -B build -DDTWIN_PYTHON="$(command -v python3)"   (its torch gives LibTorch)
#   export LD_LIBRARY_PATH="$PWD/gpu-deps/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-gpu-deps}"
roots=(libyaml-cpp-dev libfmt-dev libsimgrid-dev libcli11-dev nlohmann-json3-dev
       libsentencepiece-dev catch2 libgloo-dev)
# Base system, toolchain and anything the GPU machine provides itself.
skip='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|libstdc\+\+-12-dev|gcc-12-base|gcc-12|g\+\+-12|cpp-12|gcc|g\+\+|cpp|libgcc-12-dev|libcrypt1|libcrypt-dev|linux-libc-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto|libtirpc3|libtirpc-common|libgssapi-krb5-2|libkrb5-3|libk5crypto3|libkrb5support0|libkeyutils1|libcom-err2|libssl3|debconf|dpkg|perl-base|tar|zlib1g|libzstd1|liblzma5|libbz2-1.0|binutils.*|libbinutils|libctf.*|libgprofng0|libjansson4|libisl23|libmpc3|libmpfr6|libgmp10|libasan8|liblsan0|libtsan2|libubsan1|libitm1|libatomic1|libgomp1|libquadmath0|libcc1-0|libhwasan0|libselinux1|libpcre2-8-0|libaudit1|libaudit-common|libcap-ng0|libpam0g|libpam-modules.*|libpam-runtime|libsemanage.*|libsepol2|libdb5.3|libsystemd0|libudev1|libgcrypt20|libgpg-error0|liblz4-1|libcap2|libacl1|libattr1|libmd0|libbsd0|libtinfo6|libncursesw6|ncurses-base|readline-common|libreadline8|libffi8|libexpat1|libsqlite3-0|libuuid1|libblkid1|libmount1|libsmartcols1|util-linux.*|mount|login|passwd|adduser|lsb-base|sysvinit-utils|base-files|coreutils|bash|sed|grep|findutils|diffutils|debianutils|init-system-helpers|mawk|gzip|hostname|ncurses-bin|install-info|sensible-utils|media-types|tzdata|python3.*|libpython3.*|mime-support|netbase|mailcap|perl|perl-modules-.*|libperl.*|libgdbm.*)$'
mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${roots[@]}" | grep -E '^[a-z0-9]' | sort -u |
  grep -Ev "$skip")
debs="$prefix/debs"
mkdir -p "$debs"
echo "gather_gpu_deps: downloading ${#packages[@]} packages into $debs"
(cd "$debs" && apt-get download -q "${packages[@]}" >/dev/null)
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$prefix"; done
rm -rf "$debs" "$prefix/usr/share/doc" "$prefix/usr/share/man" "$prefix/usr/share/locale"
echo "gather_gpu_deps: unpacked into $prefix ($(du -sh "$prefix" | cut -f1)):"
printf '  %s\n' "${packages[@]}"
# One compressed file to carry (the device tool carries at most 64 MiB).
tar -C "$prefix" -cJf "$prefix.tar.xz" .
echo "gather_gpu_deps: $prefix.tar.xz ($(du -sh "$prefix.tar.xz" | cut -f1)); on the GPU machine:"
echo "  mkdir -p gpu-deps && tar -C gpu-deps -xJf $(basename "$prefix").tar.xz"
