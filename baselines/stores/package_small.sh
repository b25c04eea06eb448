#!/usr/bin/env bash
# Packages the small profile's reference rows, baselines/small-<row>/, from the finished runs kept in
# small/ for the tasks given (comma-separated, or all, the seven: the default): the six rows of each
# task, every finished seed, zero-shot from the NLPO runs' test before training (iteration -1, the
# same in every run of a task and seed). Each folder is written afresh (--force) into $OUT (default
# baselines) and checked as a submission; re-score it with `grue submit <folder> --dry-run`.
#   baselines/stores/package_small.sh imdb,commongen
set -euo pipefail
cd "$(dirname "$0")/../.."
grue=${GRUE:-.venv/bin/grue}
tasks=${1:-all}
out=${OUT:-baselines}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [[ $tasks == all ]]; then
  stores=(baselines/stores/small/*.sqlite)
else
  stores=()
  for task in ${tasks//,/ }; do
    stores+=(baselines/stores/small/"$task"_*.sqlite)
  done
fi
"$grue" merge --store "$scratch/small.sqlite" "${stores[@]}"
meta=(--author "GRUE Bench maintainers" --contact https://arxiv.org/abs/2210.01241
      --link https://arxiv.org/abs/2210.01241 --store "$scratch/small.sqlite" --task "$tasks"
      --out "$out" --force)
"$grue" submit --from-store --alg nlpo --stage zero-shot --name small-zero-shot \
    --algorithm "zero-shot (small)" "${meta[@]}"
for alg in supervised ppo nlpo supervised+ppo supervised+nlpo; do
  "$grue" submit --from-store --alg "$alg" --name "small-${alg/+/-}" --algorithm "$alg (small)" "${meta[@]}"
done
