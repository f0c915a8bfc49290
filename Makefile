# Two entry points for a fresh machine (see README):
#   make demo   install yolocost into .venv and run it on the bundled sample month
#   make test   install what the tests need and run the whole suite
#   make focus-validator   the FinOps Foundation's FOCUS validator in a venv of its own (.venv-focus)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Debian packages: `package:command` is present when the command is on PATH, a bare `package`
# when dpkg knows it. The PDFs need Pango and HarfBuzz (what WeasyPrint prints with),
# fonts-noto-core (Noto Sans, the reports' font) and fonts-noto-cjk (Chinese names): without
# Noto Sans every Latin letter is set and measured in the large CJK font, about a tenth more
# printing work; matplotlib draws their charts, no browser. The tests add
# prometheus (prometheus and promtool), victoria-metrics (the second metric store the ingest
# is tested against), chromium (loads the HTML reports in tests) and poppler-utils (reads PDFs).
PDF_DEBS ?= libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-noto-core fonts-noto-cjk
TEST_DEBS ?= $(PDF_DEBS) prometheus:prometheus prometheus:promtool victoria-metrics:victoria-metrics chromium:chromium \
	poppler-utils:pdftotext
SUDO   := $(if $(filter 0,$(shell id -u)),,sudo)

# The FinOps Foundation's focus-validator checks the finance CSV (tests/test_focus_validator.py,
# docs/focus-validator.md). Its 2.x releases need Python 3.12 (pip on 3.11 silently installs
# 1.0.0), so it lives in a venv of its own. 2.2.1 pins numpy below 2 but takes any pyarrow,
# and pyarrow 22 needs numpy 2: hence the pins. PYTHON312=/path/to/python3.12 names the Python;
# else python3.12 on PATH, else pyenv's 3.12.
FOCUS_VENV ?= .venv-focus
FOCUS_VALIDATOR_VERSION := 2.2.1
FOCUS_VALIDATOR_PINS := focus-validator==$(FOCUS_VALIDATOR_VERSION) 'pyarrow<22' 'numpy<2'
PYTHON312 ?=

.PHONY: demo test install install-test pdf-deps test-deps debs focus-validator lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

demo: install pdf-deps
	$(BIN)/yolocost demo --force

# the bench extra brings torch; pinned so pip keeps the torch the tests were run with
install-test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]' torch==2.14.1 torchvision==0.29.1

# a no-op when everything is there; apt-get update only when something is missing
pdf-deps:
	@$(MAKE) --no-print-directory debs DEBS="$(PDF_DEBS)"

test-deps:
	@$(MAKE) --no-print-directory debs DEBS="$(TEST_DEBS)"

debs:
	@missing=""; \
	for dep in $(DEBS); do \
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

# a no-op when the venv already holds focus-validator $(FOCUS_VALIDATOR_VERSION) and it imports
focus-validator:
	@if $(FOCUS_VENV)/bin/python -c 'import importlib.metadata as m; \
		assert m.version("focus-validator") == "$(FOCUS_VALIDATOR_VERSION)"; import focus_validator.main' \
		>/dev/null 2>&1; then exit 0; fi; \
	py="$(PYTHON312)"; \
	if [ -z "$$py" ]; then \
		for cand in python3.12 "$$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 \
				"$$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
			if "$$cand" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then \
				py="$$cand"; break; fi; \
		done; \
	fi; \
	if [ -z "$$py" ] || ! "$$py" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then \
		echo "make focus-validator: no Python 3.12 found$${py:+ ($$py is not a Python 3.12 with venv)}." >&2; \
		echo "  focus-validator $(FOCUS_VALIDATOR_VERSION) needs Python 3.12 (pip on 3.11 silently installs 1.0.0)." >&2; \
		echo "  Install it (e.g. pyenv install 3.12, or apt-get install python3.12-venv) or name it:" >&2; \
		echo "  make focus-validator PYTHON312=/path/to/python3.12" >&2; \
		exit 1; \
	fi; \
	echo "installing focus-validator $(FOCUS_VALIDATOR_VERSION) into $(FOCUS_VENV) with $$py"; \
	rm -rf $(FOCUS_VENV) && "$$py" -m venv $(FOCUS_VENV) && \
	$(FOCUS_VENV)/bin/python -m pip install --quiet --upgrade pip && \
	$(FOCUS_VENV)/bin/python -m pip install --quiet $(FOCUS_VALIDATOR_PINS) && \
	$(FOCUS_VENV)/bin/python -c 'import focus_validator.main'

# tests/helpers/focuscheck.py finds the validator's venv through FOCUS_VALIDATOR_VENV
test: install-test test-deps focus-validator lint
	FOCUS_VALIDATOR_VENV=$(abspath $(FOCUS_VENV)) $(BIN)/python -m pytest

# pyflakes' checks and syntax errors (pyproject.toml [tool.ruff]), then the package's type check
# (pyproject.toml [tool.mypy]); ruff and mypy come with the test extra
lint: install-test
	$(BIN)/ruff check yolocost tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(FOCUS_VENV) yolocost-demo .pytest_cache
