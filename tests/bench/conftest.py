"""The benchmark-runner tests' fixture: torch or a clear failure.

Tests that train need torch and ultralytics (the bench extra; `make test` installs it). They
fail when it is missing, unless YOLOCOST_SKIP_BENCH=1 says to skip them: CI must not pass by
skipping. Shared helpers live in tests/helpers/benchkit.py.
"""

import pytest
from helpers.benchkit import require_bench


@pytest.fixture(scope="session")
def bench_ready() -> None:
    require_bench()
