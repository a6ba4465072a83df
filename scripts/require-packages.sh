#!/usr/bin/env bash
# require-packages.sh [--test] [--first|--rest] - the Debian packages the kit uses.
#
# Two lists: what the main job truly needs (a C compiler, make, python3,
# patch, libpcap for the analysers, jansson for the probe's and the
# analysers' JSON; with --test also CUnit), and what makes
# more rows and steps run (tracers, clients, FPC, Wine, sanitizer runtimes,
# the reverse proxies of the rows behind nginx, haproxy and Apache).
# As root every missing package is installed (unless KIT_NO_INSTALL=1,
# as for the fresh-machine step).  Otherwise a missing needed
# package fails (exit 1) naming it; a missing optional one is named once and
# the steps that use it skip with the reason (exit 4 there, never a failure).
# --first: only what the builds read (the needed packages and the optional
# ones in build_tools below), so that --rest (everything else) can install
# beside the builds (scripts/builds.sh).
set -euo pipefail
# package:file that proves it is there
need=(
    build-essential:/usr/bin/cc
    make:/usr/bin/make
    python3:/usr/bin/python3
    patch:/usr/bin/patch
    libpcap-dev:/usr/include/pcap/pcap.h
    libjansson-dev:/usr/include/jansson.h
    xz-utils:/usr/bin/xz
)
want=(
    tcpdump:/usr/bin/tcpdump
    strace:/usr/bin/strace
    iproute2:/usr/sbin/ip
    curl:/usr/bin/curl
    wrk:/usr/bin/wrk
    nghttp2-client:/usr/bin/h2load
    nodejs:/usr/bin/node
    npm:/usr/bin/npm
    python3-urllib3:/usr/lib/python3/dist-packages/urllib3/__init__.py
    gnuplot-nox:/usr/bin/gnuplot
    fpc:/usr/bin/fpc
    wine64:/usr/lib/wine/wine64
    wine:/usr/bin/wine
    git:/usr/bin/git
    nginx-light:/usr/sbin/nginx
    haproxy:/usr/sbin/haproxy
    apache2:/usr/sbin/apache2
)
# (The rows behind the proxies start their own, on free loopback ports; a
# daemon Debian's post-install may have started is neither used nor stopped.)
# The optional packages the builds themselves use (the trunk toolchain's
# bootstrap compiler and the FPC 3.2.2 build; Horse's tree is a git repository).
build_tools=" fpc git "
# What only `make test` uses (CUnit needed, the rest optional there).
test_need=(libcunit1-dev:/usr/include/CUnit/Basic.h)
test_want=(clang:/usr/bin/clang
           libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
           valgrind:/usr/bin/valgrind
           netcat-openbsd:/usr/bin/nc.openbsd
           ncat:/usr/bin/ncat
           python3-yaml:/usr/lib/python3/dist-packages/yaml/__init__.py)
# --list: 'ROLE PACKAGE FILE' a line, ROLE main, optional or test (the
# fresh-machine step, tests/fresh/, hides packages by role).
if [[ ${1:-} == --list ]]; then
    for item in "${need[@]}"; do echo "main ${item%%:*} ${item#*:}"; done
    for item in "${want[@]}"; do echo "optional ${item%%:*} ${item#*:}"; done
    for item in "${test_need[@]}" "${test_want[@]}"; do echo "test ${item%%:*} ${item#*:}"; done
    exit 0
fi
part=all
while (($#)); do
    case $1 in
    --test) need+=("${test_need[@]}"); want+=("${test_want[@]}") ;;
    --first|--rest) part=${1#--} ;;
    *) echo "usage: require-packages.sh [--list] [--test] [--first|--rest]" >&2; exit 2 ;;
    esac
    shift
done
if [[ $part != all ]]; then
    first=() rest=()
    for item in "${want[@]}"; do
        if [[ $build_tools == *" ${item%%:*} "* ]]; then first+=("$item"); else rest+=("$item"); fi
    done
    if [[ $part == first ]]; then want=("${first[@]}"); else need=() want=("${rest[@]}"); fi
fi
missing() {
    local item
    for item in "$@"; do [[ -e ${item#*:} ]] || echo "${item%%:*}"; done
}
mapfile -t miss_need < <(missing "${need[@]}")
mapfile -t miss_want < <(missing "${want[@]}")
all=("${miss_need[@]}" "${miss_want[@]}")
((${#all[@]} == 0)) && exit 0
if [[ $(id -u) -eq 0 && ${KIT_NO_INSTALL:-0} != 1 ]]; then
    echo "installing: ${all[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${all[@]}" >&2
    exit 0
fi
if ((${#miss_want[@]})); then
    echo "note: optional Debian packages missing (their steps will skip): ${miss_want[*]}" >&2
fi
if ((${#miss_need[@]})); then
    echo "missing Debian packages: ${miss_need[*]}" >&2
    echo "install them with: sudo apt-get install ${miss_need[*]}" >&2
    exit 1
fi
exit 0
