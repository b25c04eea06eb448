#!/usr/bin/env bash
# The small profile on a GPU: mixed precision's CUDA paths and a kill and resume, with figures (run
# by hand on a CUDA machine with no network; see benchmarks/README.md, "On a GPU").
#
#   bash benchmarks/cuda_check.sh prepare   # here, with the network: wheels the GPU image lacks
#                                            # into .whl/, the small model's config and tokenizer and
#                                            # into .gpu/ (both git-ignored)
#   bash benchmarks/cuda_check.sh run OUT    # there, from the repository's root; figures into OUT
#
# The GPU machine cannot hold SmolLM2-135M-Instruct's weights (they ship in a 100 MB package), so
# `run` gives the model of that config random weights: the arithmetic, memory and time of every
# pass are the real model's, its texts and rewards are not (no learning figure comes from here).
set -uo pipefail
WHEELS=(datasets==5.2.0 evaluate==0.4.6 nltk==3.10.4 sqlite-utils==4.2.1 sqlite-fts4==1.0.3
  click-default-group==1.2.4 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0
  typing-inspection==0.4.5 py-rouge==1.1 sacremoses==0.2.0 vaderSentiment==3.3.2 dill==0.4.1
  multiprocess==0.70.19 bert-score==0.3.13)
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/grue_bench"

prepare() {
  mkdir -p .whl .gpu/smollm2
  for wheel in "${WHEELS[@]}"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$wheel" || exit 1
  done
  python3 -m pip wheel -q --no-deps rouge_score==0.1.2 -w .whl || exit 1  # no wheel on PyPI
  (cd "$CACHE/models/smollm2-135m" && cp config.json generation_config.json tokenizer.json \
    tokenizer_config.json chat_template.jinja "$OLDPWD/.gpu/smollm2/") || exit 1
  tar -C "$CACHE" -czf .gpu/nltk_data.tgz nltk_data || exit 1  # WordNet for METEOR (make install builds it)
}

run() {
  local out="$1"
  if [ -z "${PROFILE:-}" ]; then  # a try-out on a CPU has the packages installed
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .whl/*.whl || exit 1
  fi
  export PYTHONPATH="/tmp/site:$PWD" GRUE_CACHE=/tmp/grue_cache HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
    PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
  mkdir -p "$GRUE_CACHE/models"
  [ -f .gpu/nltk_data.tgz ] && tar -C /tmp -xzf .gpu/nltk_data.tgz && export NLTK_DATA=/tmp/nltk_data
  nvidia-smi -L
  python3 - .gpu/smollm2 "$GRUE_CACHE/models/smollm2-135m" <<'PY' || exit 1
import json, shutil, sys
from pathlib import Path
import torch, transformers
from transformers import LlamaConfig, LlamaForCausalLM
source, target = Path(sys.argv[1]), Path(sys.argv[2])
print("torch", torch.__version__, "transformers", transformers.__version__, torch.cuda.is_available())
torch.manual_seed(0)
LlamaForCausalLM(LlamaConfig.from_pretrained(source)).save_pretrained(target)
for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
    shutil.copy(source / name, target / name)
marker = {"kind": "small", "model": "SmolLM2-135M-Instruct", "source": "random weights (cuda_check.sh)"}
(target / "grue_model.json").write_text(json.dumps(marker))
PY
  local profile="${PROFILE:-small}"  # PROFILE=tiny tries the script on a CPU in a minute
  local bench="python3 benchmarks/bench_profile.py --profile $profile --threads 8 --iters 3"
  local precision evaluate=""  # the first precision's run takes the test evaluation too
  for precision in ${PRECISIONS:-bf16 fp16 fp32}; do
    $bench --precision "$precision" $evaluate | tee -a "$out/figures.jsonl"
    evaluate=--no-eval
  done
  # killed during its fifth iteration (after four checkpoints), then resumed to its end
  local grue="python3 -m grue_bench run --task imdb --alg ppo --profile $profile --seeds 1 --precision bf16
    --store $out/resume.sqlite --output-dir /tmp/grue_runs --jobs 1 --set train_evaluation.n_iters=6 --set train_evaluation.save_every=1 --set train_evaluation.eval_every=100"
  $grue > "$out/first.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    grep -q " 4/6 " "$out/first.log" 2>/dev/null && break  # the run's progress bar
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$pid" && echo "killed during iteration 5" || echo "not killed: the first run had ended"
  $grue > "$out/resumed.log" 2>&1
  echo "resume rc=$?"
  python3 -m grue_bench runs --store "$out/resume.sqlite" 2>&1 | tail -5
}

case "${1:-}" in
  prepare) prepare ;;
  run) run "${2:?the folder for the figures}" ;;
  *) echo "usage: $0 prepare | run OUT" >&2; exit 2 ;;
esac
