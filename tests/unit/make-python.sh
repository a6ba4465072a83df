#!/usr/bin/env bash
# tests/unit/make-python.sh - the Makefile's recipes start the interpreter
# `python3` names, never a shim in front of it (pyenv's is two dozen bash
# processes per start, and the suite starts python3 hundreds of times):
#   - python3 on PATH is a shim (a script that execs the interpreter, as
#     pyenv's does): a recipe's python3 is the interpreter itself;
#   - python3 on PATH is the interpreter: a recipe's PATH is the caller's.
# Exit: 0 pass, 1 fail.
set -u
kit_name="make-python check"
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
cd "$top" || exit 1
trap kit_cleanup EXIT
tmp=""
kit_mktemp tmp
fail=0
real=$(python3 -c 'import sys; print(sys.executable)') || die "no python3"
# in_recipe PATH: the python3 a recipe finds, then the recipe's PATH.
in_recipe() {
    PATH=$1 make -s --no-print-directory --eval 'kitpy: ; @command -v python3; echo "$$PATH"' kitpy
}
check() {   # check NAME WANT GOT DETAIL
    if [[ $2 == "$3" ]]; then test_ok "$1" "$4"; else test_fail "$1" "$4"; fail=1; fi
}

mkdir -p "$tmp/shim"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$real" > "$tmp/shim/python3"
chmod +x "$tmp/shim/python3"
mapfile -t got < <(in_recipe "$tmp/shim:$PATH")
check "make-python a shim is passed by" "$real" "${got[0]:-}" \
    "python3 on PATH $tmp/shim/python3, a recipe's ${got[0]:-none}"

direct=$(dirname "$real"):$PATH
mapfile -t got < <(in_recipe "$direct")
check "make-python no shim, PATH as it was" "$direct" "${got[1]:-}" \
    "python3 on PATH $real, a recipe's PATH ${got[1]:0:60}..."
exit $fail
