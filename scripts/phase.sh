#!/usr/bin/env bash
# scripts/phase.sh - the phases of `make repro` and `make test`: each shown
# with its elapsed time while it runs, and a table of them at the end.
#
#   phase.sh begin TITLE       start a table (KIT_PHASES, default
#                              build/phases.tsv): TITLE and the start time
#   phase.sh run [--no-beat] NAME -- CMD...
#                              run CMD as the phase NAME: a line when it
#                              starts, a line with the elapsed time whenever
#                              CMD has printed nothing for 10 s (not with
#                              --no-beat: output to a log), a line with
#                              its time when it ends; a row in the table.
#                              Exit status: CMD's.  CMD's stderr is merged
#                              into its stdout (so that either counts as
#                              output), Python unbuffered
#   phase.sh tick WHAT         inside a phase CMD (a build among several):
#                              prints 'WHAT (k of N, T s)', k counting the
#                              ticks of the phase, N from KIT_PHASE_OF (set
#                              it for CMD: KIT_PHASE_OF=N phase.sh run ...);
#                              outside a phase, just WHAT
#   phase.sh record NAME SECONDS [NOTE]
#                              a row timed elsewhere (the clients, beside
#                              the matrix)
#   phase.sh table             print the table: each phase's time, and the
#                              wall time since begin (phases side by side
#                              overlap, so it is not their sum); the first
#                              table of a begun run records that end
#   phase.sh table --markdown [TSV]
#                              the table of TSV (default the last run's)
#                              as Markdown, for README.md: its total is to
#                              the recorded end (a run from before it was
#                              recorded: to the last row's write)
# Without a begun table, run and record still time and print, and the
# rows go to a table of their own.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
table=${KIT_PHASES:-$top/build/phases.tsv}
QUIET_S=10

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

case ${1:-} in
begin)
    mkdir -p "$(dirname "$table")"
    printf '#\t%s\t%s\n' "$(now)" "${2:-phases}" > "$table"
    ;;
run)
    shift
    beat_s=$QUIET_S
    [[ ${1:-} == --no-beat ]] && { beat_s=""; shift; }
    name=$1; shift
    [[ ${1:-} == -- ]] && shift
    mkdir -p "$(dirname "$table")"
    state=$(mktemp -d "${TMPDIR:-/tmp}/kit-phase.XXXXXX")
    beat=""
    cleanup() {
        [[ -n $beat ]] && kill "$beat" 2>/dev/null && wait "$beat" 2>/dev/null
        rm -rf "$state"
    }
    trap cleanup EXIT
    t0=$(now)
    echo "== $name"
    : > "$state/count"
    # The heartbeat: every 10 s, if nothing was printed since the last
    # look (the reader below leaves $state/out), the elapsed time.
    if [[ -n $beat_s ]]; then
        (
            # (sleep keeps none of our descriptors: a pipe reading this
            # phase ends when the phase does, not when the last sleep does)
            while sleep "$beat_s" < /dev/null > /dev/null 2>&1; do
                if [[ -e $state/out ]]; then rm -f "$state/out"
                else echo "   ... $name: $(secs "$t0" "$(now)") s"; fi
            done
        ) &
        beat=$!
    fi
    export KIT_PHASE_NAME=$name KIT_PHASE_T0=$t0 KIT_PHASE_COUNT=$state/count PYTHONUNBUFFERED=1
    "$@" 2>&1 | while IFS= read -r line; do printf '%s\n' "$line"; : > "$state/out"; done
    rc=${PIPESTATUS[0]}
    t=$(secs "$t0" "$(now)")
    if ((rc == 0)); then echo "== $name: $t s"; else echo "== $name: $t s (exit $rc)"; fi
    printf '%s\t%s\t%s\n' "$name" "$t" "$( ((rc == 0)) || echo "exit $rc")" >> "$table"
    exit "$rc"
    ;;
tick)
    what=$2
    if [[ -z ${KIT_PHASE_COUNT:-} || ! -f $KIT_PHASE_COUNT ]]; then echo "$what"; exit 0; fi
    exec 9>> "$KIT_PHASE_COUNT"
    flock 9
    echo x >&9
    k=$(wc -l < "$KIT_PHASE_COUNT")
    exec 9>&-
    echo "$what ($k${KIT_PHASE_OF:+ of $KIT_PHASE_OF}, $(secs "$KIT_PHASE_T0" "$(now)") s)"
    ;;
record)
    mkdir -p "$(dirname "$table")"
    printf '%s\t%s\t%s\n' "$2" "$3" "${4:-}" >> "$table"
    ;;
table)
    if [[ ${2:-} == --markdown ]]; then
        tsv=${3:-$table}
        [[ -f $tsv ]] || { echo "phase.sh: no table $tsv" >&2; exit 1; }
        awk -F'\t' -v mtime="$(stat -c %Y "$tsv")" '
            BEGIN { print "| phase | time |"; print "|---|---|" }
            $1 == "#" { t0 = $2; next }
            $1 == "#end" { end = $2; next }
            { printf "| %s | %.1f s%s |\n", $1, $2, ($3 == "" ? "" : " (" $3 ")") }
            END { if (t0 != "") printf "| total (wall) | %.1f s |\n", (end != "" ? end : mtime) - t0 }' "$tsv"
        exit 0
    fi
    [[ -f $table ]] || exit 0
    grep -q '^#end' "$table" || ! grep -q '^#	' "$table" || printf '#end\t%s\n' "$(now)" >> "$table"
    awk -F'\t' -v end="$(now)" '
        $1 == "#" { t0 = $2; title = $3; next }
        $1 == "#end" { next }
        { name[++n] = $1; t[n] = $2; note[n] = $3; if (length($1) > w) w = length($1) }
        END {
            if (w < 12) w = 12
            printf "\n%s: phases\n", (title == "" ? "phases" : title)
            printf "  %-*s  %8s\n", w, "phase", "time"
            for (i = 1; i <= n; i++)
                printf "  %-*s  %6.1f s%s\n", w, name[i], t[i], (note[i] == "" ? "" : "  " note[i])
            if (t0 != "") printf "  %-*s  %6.1f s\n", w, "total (wall)", end - t0
        }' "$table"
    ;;
*)
    sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
