#!/usr/bin/env bash
# require-packages.sh: the Debian packages the kit uses.  As root, missing
# ones are installed; otherwise they are named and the script fails.
set -euo pipefail
# package:command-or-file that proves it is there
need=(
    build-essential:/usr/bin/cc
    clang:/usr/bin/clang
    libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
    libcunit1-dev:/usr/include/CUnit/Basic.h
    libpcap-dev:/usr/include/pcap/pcap.h
    tcpdump:/usr/bin/tcpdump
    strace:/usr/bin/strace
    iproute2:/usr/sbin/ip
    jq:/usr/bin/jq
    curl:/usr/bin/curl
    wrk:/usr/bin/wrk
    nodejs:/usr/bin/node
    python3:/usr/bin/python3
    python3-urllib3:/usr/lib/python3/dist-packages/urllib3/__init__.py
    valgrind:/usr/bin/valgrind
    gnuplot-nox:/usr/bin/gnuplot
    fpc:/usr/bin/fpc
    patch:/usr/bin/patch
)
missing=()
for item in "${need[@]}"; do
    pkg=${item%%:*} path=${item#*:}
    [[ -e $path ]] || missing+=("$pkg")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -ne 0 ]]; then
    echo "missing Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
