#!/usr/bin/env bash
# Runs grid lines ("<task> <alg> <seed>", one a line, "#" comments) one after the other, each into
# its own store, baselines/stores/small/<task>_<alg>_seed<seed>.sqlite ("+" written "-"), as
# README.md in this folder says; a line whose store holds a finished run is skipped, so a lane
# killed and started again goes on. Run two lanes at once on 2 cores, each over its own lines:
#   baselines/stores/run_grid.sh < lane-a.txt > lane-a.log 2>&1 &
# Chains run after their task and seed's supervised run, in the same lane (they share its fit).
set -euo pipefail
cd "$(dirname "$0")/../.."
grue=${GRUE:-.venv/bin/grue}
while read -r task alg seed _; do
  [[ -z ${task:-} || $task == \#* ]] && continue
  store=baselines/stores/small/${task}_${alg//+/-}_seed${seed}.sqlite
  if [[ -f $store && $(sqlite3 "$store" "select count(*) from runs where status = 'finished'") -ge 1 ]]; then
    echo "$(date -u +%FT%TZ) skip $task $alg $seed: finished in $store"
    continue
  fi
  echo "$(date -u +%FT%TZ) start $task $alg $seed"
  OMP_NUM_THREADS=1 "$grue" run --task "$task" --alg "$alg" --profile small --seed-list "$seed" \
    --jobs 1 --store "$store" --output-dir runs < /dev/null
  sqlite3 "$store" "PRAGMA journal_mode = DELETE" > /dev/null
  echo "$(date -u +%FT%TZ) done $task $alg $seed"
done
