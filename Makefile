# make demo: set up, then run the Lomb-Scargle quick start on the bundled data
# make test: set up, then run the test suite
# make bench: run the benchmarks (bench/run_all.py)
# make docs: set up, then build the documentation into docs/_build/html (warnings are errors)
PYTHON ?= python3
export PYTHON

.PHONY: demo test bench setup docs

setup:
	bash scripts/setup_env.sh

demo:
	bash scripts/setup_env.sh && $(PYTHON) examples/quickstart.py

test:
	bash scripts/setup_env.sh && $(PYTHON) -m pytest -q

docs:
	bash scripts/setup_env.sh && $(PYTHON) -m sphinx -W --keep-going -b html docs docs/_build/html

bench:
	bash scripts/setup_env.sh
	@if [ -f bench/run_all.py ]; then $(PYTHON) bench/run_all.py; \
	else echo "bench/run_all.py not found; run a bench/bench_*.py script directly"; exit 1; fi
