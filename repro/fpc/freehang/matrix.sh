#!/bin/bash
# matrix.sh BIN TAG : run the cases, logs in runs/TAG/
bin=$1 tag=$2; shift 2
mkdir -p runs/$tag
port=${PORTBASE:-20000}
cases=()
while read -r mode client kct rrt kit; do
  [[ -z $mode || $mode == \#* ]] && continue
  port=$((port+1))
  cases+=("$mode $client $kct $rrt $port ${kit:--1}")
done
printf '%s\n' "${cases[@]}" | xargs -P 12 -L 1 bash -c '
  name="$0-$1-$2-$3-k$5"; s=$(date +%s%N)
  timeout 60 '"$bin"' "$0" "$1" "$2" "$3" "$4" 45 "$5" > runs/'"$tag"'/$name.log 2>&1; rc=$?
  echo "rc=$rc wall=$(( ($(date +%s%N)-s)/1000000 ))ms" >> runs/'"$tag"'/$name.log'
