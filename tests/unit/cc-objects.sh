#!/usr/bin/env bash
# tests/unit/cc-objects.sh - scripts/cc-objects.py builds what cc builds,
# and shares an object only where the compile is the same:
#   - stock and `all` through it: the same .text and .rodata as one plain
#     `cc` command with the Makefile's flags (only file names may differ,
#     and the model's code names none);
#   - a copy of server-min/ (--map): no new object, nothing in the objects
#     naming the copy;
#   - a line added to connection.h in the copy: new objects for exactly the
#     sources whose `cc -MM` lists connection.h (another route to the
#     answer than the script's own);
#   - a macro reached only by token pasting: a new object when its -D
#     value changes, none for a -D the source never reaches;
#   - a source that does not compile: the compiler's message and status,
#     no object and no program.
# Exit: 0 pass, 1 fail, 4 skip (no objcopy).
set -u
kit_name="cc-objects check"
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
cd "$top" || exit 1
require_command objcopy binutils "cc-objects"
trap kit_cleanup EXIT
tmp=""
kit_mktemp tmp
fail=0
# The Makefile's own flags and command (one fact in one place).
mkvar() { make -s --no-print-directory --eval "kitvar: ; @echo \$($1)" kitvar; }
read -ra flags <<< "$(mkvar ALL_CFLAGS)"
read -ra cco <<< "$(mkvar CCO)"
cc=$(mkvar CC)
export KIT_CC_OBJECTS=$tmp/objects
nobj() { find "$KIT_CC_OBJECTS" -maxdepth 1 -name '*.o' 2> /dev/null | wc -l; }
same_code() {   # same_code A B: same .text and .rodata
    local s
    for s in .text .rodata; do
        objcopy -O binary --only-section="$s" "$1" "$tmp/a.bin" && objcopy -O binary --only-section="$s" "$2" "$tmp/b.bin" \
            && cmp -s "$tmp/a.bin" "$tmp/b.bin" || return 1
    done
}
check() {   # check NAME CONDITION-RESULT DETAIL
    if (($2)); then test_ok "$1" "$3"; else test_fail "$1" "$3"; fail=1; fi
}

# stock and all, against plain cc
copy=$tmp/copy/src
mkdir -p "$copy"
scripts/build-variant.sh all "$tmp/all" > /dev/null || die "build-variant.sh all failed"
"${cco[@]}" "$cc" "${flags[@]}" -o "$tmp/stock" server-min/*.c \
    && "$cc" "${flags[@]}" -o "$tmp/stock.plain" server-min/*.c && same_code "$tmp/stock" "$tmp/stock.plain"
check "cc-objects stock = plain cc" $((! $?)) "$(nobj) objects"
n0=$(nobj)
"${cco[@]}" --map "$tmp/all/src/=" "$cc" "${flags[@]}" -o "$tmp/all.bin" "$tmp/all/src/server-min/"*.c \
    && "$cc" "${flags[@]}" -o "$tmp/all.plain" "$tmp/all/src/server-min/"*.c && same_code "$tmp/all.bin" "$tmp/all.plain"
check "cc-objects all = plain cc" $((! $?)) "$(($(nobj) - n0)) new objects of $(find "$tmp/all/src/server-min" -name '*.c' | wc -l)"

# a copy: every object shared, none naming the copy
cp -r server-min "$copy/"
n0=$(nobj)
"${cco[@]}" --map "$copy/=" "$cc" "${flags[@]}" -o "$tmp/copy.bin" "$copy/server-min/"*.c
new=$(($(nobj) - n0))
named=$(grep -l -F "$copy" "$KIT_CC_OBJECTS"/*.o | wc -l)
check "cc-objects copy shares every object" $((new == 0 && named == 0)) "$new new, $named naming the copy"

# a header line: new objects for exactly its includers
echo 'extern int kit_cc_objects_check;' >> "$copy/server-min/connection.h"
want=0
for f in "$copy/server-min/"*.c; do
    "$cc" "${flags[@]}" -MM "$f" | tr -s '[:space:]' '\n' | grep -qx "$copy/server-min/connection.h" && want=$((want + 1))
done
n0=$(nobj)
"${cco[@]}" --map "$copy/=" "$cc" "${flags[@]}" -o "$tmp/copy.bin" "$copy/server-min/"*.c
new=$(($(nobj) - n0))
check "cc-objects header change reaches its includers" $((new == want && want > 0)) "$new new objects, $want sources include connection.h"

# token pasting: the -D the text reaches only through ##
cat > "$tmp/paste.c" << 'EOF'
#define PICK(n) KIT_PASTE_##n
int main(void) { return PICK(1); }
EOF
build_paste() { "${cco[@]}" "$cc" "${flags[@]}" "$@" -o "$tmp/paste" "$tmp/paste.c"; }
build_paste -DKIT_PASTE_1=1 && n0=$(nobj) && build_paste -DKIT_PASTE_1=2 && n1=$(nobj) \
    && build_paste -DKIT_PASTE_1=2 -DKIT_UNUSED=7 && n2=$(nobj)
rc=0; "$tmp/paste" || rc=$?
check "cc-objects macro through ## makes a new object" $((n1 == n0 + 1 && n2 == n1 && rc == 2)) \
    "value changed: $((n1 - n0)) new; unused -D: $((n2 - n1)) new; exit $rc"

# a compile error
printf 'int main(void) { return undeclared; }\n' > "$tmp/bad.c"
n0=$(nobj)
out=$("${cco[@]}" "$cc" "${flags[@]}" -o "$tmp/bad" "$tmp/bad.c" 2>&1)
rc=$?
check "cc-objects compile error fails" $((rc != 0 && $(nobj) == n0)) "exit $rc, $(($(nobj) - n0)) objects, program $([[ -e $tmp/bad ]] && echo made || echo absent): $(grep -m1 -o "error: .*" <<< "$out")"
[[ ! -e $tmp/bad ]] || fail=1
exit $fail
