# Two entry points for a fresh machine (see README):
#   make demo   install yolocost into .venv and run it on the bundled sample month
#   make test   install what the tests need and run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

demo: install
	$(BIN)/yolocost demo

install-test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'

test: install-test
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) yolocost-demo .pytest_cache
