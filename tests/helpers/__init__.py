"""Helpers the tests share (no fixtures: those live in the conftest files).

pyproject's [tool.pytest.ini_options] pythonpath puts tests/ on the import path, so a test imports
`from helpers.builders import ...`. netguard.py is a script benchkit runs, not a module.
"""
