# Two commands: `make run` starts the product, `make test` runs every test.
# Both bootstrap themselves (virtualenv, Python packages, redis-server, Tesseract; PostgreSQL,
# Chromium and fonts for the tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
REDIS_PORT ?= 6379
export REDIS_URL ?= redis://127.0.0.1:$(REDIS_PORT)/0

.PHONY: run test test-fast bench bootstrap system-packages clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	$(BIN)/pip install -q --disable-pip-version-check --no-deps $$($(BIN)/python -c \
	  "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['tool']['groundwork']['no-deps-dependencies'])")
	touch $@

# WeasyPrint (a report's PDF) needs Pango, and fonts for what a file may quote: DejaVu (Latin,
# Greek, Cyrillic), Noto (Arabic, Hebrew, Indic, Thai, …) and Noto CJK (Chinese, Japanese, Korean).
# The test scans are typeset in DejaVu too.
PDF_PACKAGES := libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core fonts-noto-core fonts-noto-cjk

# redis-server, Tesseract with the languages of GROUNDWORK_OCR_LANGUAGES (scanned documents; not
# with GROUNDWORK_OCR=off; tesseract-ocr brings English, "eng+fra" adds tesseract-ocr-fra, "chi_sim"
# tesseract-ocr-chi-sim), the PDF packages, and for the tests Chromium, PostgreSQL and
# poppler-utils's pdftoppm (which draws an exported PDF's page) come from Debian's packages.
system-packages:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ "$${GROUNDWORK_OCR:-auto}" != off ]; then \
	  command -v tesseract >/dev/null || missing="$$missing tesseract-ocr"; \
	  for code in $$(echo "$${GROUNDWORK_OCR_LANGUAGES:-eng}" | tr '+,' '  '); do \
	    [ "$$code" = eng ] || compgen -G "/usr/share/tesseract-ocr/*/tessdata/$$code.traineddata" >/dev/null \
	      || missing="$$missing tesseract-ocr-$$(echo "$$code" | tr '_A-Z' '-a-z')"; \
	  done; \
	fi; \
	if command -v dpkg-query >/dev/null; then \
	  for package in $(PDF_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "ok installed" || missing="$$missing $$package"; \
	  done; \
	fi; \
	[ -n "$(NEED_CHROMIUM)" ] && ! [ -x /usr/bin/chromium ] && missing="$$missing chromium"; \
	[ -n "$(NEED_PDFTOPPM)" ] && ! command -v pdftoppm >/dev/null && missing="$$missing poppler-utils"; \
	[ -n "$(NEED_POSTGRES)" ] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
	  && ! command -v initdb >/dev/null && missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	  else \
	    echo "missing:$$missing. Install it (e.g. sudo apt-get install$$missing) and run make again." >&2; exit 1; \
	  fi; \
	fi

bootstrap: $(BIN)/.installed system-packages

# A local development run: DEBUG on unless set, and this machine's own SECRET_KEY in var/secret_key
# (under GROUNDWORK_VAR_DIR).
# The workers restart when they die (bin/restart-on-exit); the Redis it starts keeps its
# queues in var/appendonlydir, so jobs queued survive a restart of `make run`.
run: export DEBUG ?= 1
# Where the run keeps its database, files, key and Redis queues (config/settings.py reads the same variable).
run: export GROUNDWORK_VAR_DIR ?= $(CURDIR)/var
run: bootstrap
	@mkdir -p "$$GROUNDWORK_VAR_DIR"
	@# This machine's own key, kept for manage.py in other shells (config/settings.py reads it).
	@key="$$GROUNDWORK_VAR_DIR/secret_key"; test -s "$$key" || (umask 077; $(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > "$$key")
	$(BIN)/python manage.py migrate --noinput -v 0
	$(BIN)/python manage.py ensure_demo_user
	@procfile="$$GROUNDWORK_VAR_DIR/Procfile.run"; \
	sed -E 's#^(worker|llm|beat): #\1: bin/restart-on-exit #' Procfile > $$procfile; \
	$(BIN)/python bin/redis-procfile-line "$$REDIS_URL" >> $$procfile || exit 1; \
	echo; echo "  Groundwork: http://$(HOST):$(PORT)/   login: demo / demo   (LLM: $${GROUNDWORK_LLM:-$$( [ -n "$$ANTHROPIC_API_KEY" ] && echo anthropic || echo offline extractive mode)}; embeddings: $${GROUNDWORK_EMBEDDINGS:-local})"; echo; \
	PATH="$(CURDIR)/$(BIN):$$PATH" PORT=$(PORT) HOST=$(HOST) exec $(BIN)/honcho start -f $$procfile

# The suite starts and stops its own redis-server on a free port (tests/conftest.py)
# and its own daphne for the browser tests, which run in Debian's Chromium; S3 is
# moto in server mode. It runs twice, side by side: on SQLite (the embedded default) and on a
# throwaway PostgreSQL cluster of its own (tests/production/postgres_server.py). Each pass spends
# half its time waiting on workers, servers and the browser, so two passes share the two cores of
# a CI machine. A quality or cost figure (marked `figure`) is measured in the PostgreSQL pass
# alone, which has no browser tests to run. That pass keeps its files in a var dir of its own and
# its output in var/test-postgres.log, printed when it ends. Ctrl-C stops the SQLite pass; the
# PostgreSQL one (in the background, deaf to Ctrl-C) runs to its end and stops its own servers.
test: NEED_CHROMIUM = 1
test: NEED_POSTGRES = 1
test: NEED_PDFTOPPM = 1
test: bootstrap
	@mkdir -p var/test-postgres
	@GROUNDWORK_VAR_DIR=$(CURDIR)/var/test-postgres GROUNDWORK_TEST_DATABASE=postgres \
	  $(BIN)/pytest $(PYTEST_ARGS) > var/test-postgres.log 2>&1 & postgres=$$!; \
	$(BIN)/pytest -m 'not figure' $(PYTEST_ARGS); sqlite=$$?; \
	wait $$postgres; postgres=$$?; \
	echo "== the PostgreSQL pass (var/test-postgres.log)"; cat var/test-postgres.log; \
	echo "== SQLite pass: exit $$sqlite; PostgreSQL pass: exit $$postgres"; \
	[ $$sqlite = 0 ] && [ $$postgres = 0 ]

# The unit and API tests alone (no worker, no browser): seconds, for the edit-test loop.
test-fast: bootstrap
	$(BIN)/pytest -m "not stack and not browser" $(PYTEST_ARGS)

# Each prints its figures and writes bench/results/<name>.json.
BENCHES := context search ir run grounding chat llm_scale prompt_cache embed retrieval library_scale export ocr update page \
  research_quality
bench: bootstrap
	@set -e; for name in $(BENCHES); do echo "== bench/$${name}_bench.py"; $(BIN)/python bench/$${name}_bench.py; done

clean:
	rm -rf $(VENV) var
