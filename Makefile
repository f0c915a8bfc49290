# Two entry points for a fresh machine (see README):
#   make demo   install yolocost into .venv and run it on the bundled sample month
#   make test   install what the tests need and run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Debian packages the tests need: `package:command` is present when the command is on PATH,
# a bare `package` when dpkg knows it (prometheus brings prometheus and promtool; victoria-metrics is
# the second metric store the ingest is tested against; chromium draws
# the report charts for kaleido and loads the HTML reports in tests; Pango and HarfBuzz are
# what WeasyPrint prints PDFs with; fonts-noto-cjk for Chinese names; poppler-utils reads PDFs)
TEST_DEBS ?= prometheus:prometheus prometheus:promtool victoria-metrics:victoria-metrics chromium:chromium fonts-noto-cjk poppler-utils:pdftotext \
	libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0
SUDO   := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo test install install-test test-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

demo: install
	$(BIN)/yolocost demo --force

# the bench extra brings torch; pinned so pip keeps the torch the tests were run with
install-test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]' torch==2.14.1 torchvision==0.29.1

# a no-op when everything is there; apt-get update only when something is missing
test-deps:
	@missing=""; \
	for dep in $(TEST_DEBS); do \
		pkg=$${dep%%:*}; cmd=$${dep#*:}; \
		if [ "$$cmd" != "$$dep" ]; then command -v $$cmd >/dev/null 2>&1 && continue; \
		else dpkg -s $$pkg >/dev/null 2>&1 && continue; fi; \
		case " $$missing " in *" $$pkg "*) ;; *) missing="$$missing $$pkg";; esac; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

test: install-test test-deps
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) yolocost-demo .pytest_cache
