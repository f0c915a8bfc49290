"""Files the config points at for TLS and credentials: one line naming the key, exit 2, nothing
of a secret shown.

The real CLI in a subprocess; the config is read before any request, so no server is needed
(the URL points at a port nothing listens on, and is never reached).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers.builders import yolocost

SECRET = "s3cr3t-T0KEN-\u00e9\u00e9-value"  # Latin-1 text; written below in an encoding that is not UTF-8


def run(config: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "YOLOCOST_CONFIG"}
    return yolocost("--config", str(config), "--db", str(tmp_path / "yc.duckdb"), "ingest", "--start", "2026-10-01",
                    "--end", "2026-10-02", cwd=tmp_path, env=env, timeout=120)


def one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    assert result.returncode == 2, f"exit {result.returncode}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def config(tmp_path: Path, lines: str) -> Path:
    path = tmp_path / "yolocost.toml"
    path.write_text(f'[prometheus]\nurl = "https://127.0.0.1:9"\n{lines}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("key, extra", [("bearer_token_file", ""), ("password_file", 'username = "alice"\n')])
def test_a_secret_file_that_is_not_utf8(tmp_path, key, extra):
    (tmp_path / "secret").write_bytes(SECRET.encode("latin-1"))  # \xe9: not UTF-8
    result = run(config(tmp_path, f'{extra}{key} = "secret"'), tmp_path)
    line = one_line_error(result, f"prometheus.{key}: {tmp_path / 'secret'} is not UTF-8 text")
    shown = result.stdout + result.stderr
    # nothing of the secret: no part of it, no byte value, no position inside it
    for part in ("s3cr3t", "T0KEN", "value", "\u00e9", "xe9", "0xe9", "position", "byte"):
        assert part not in shown, line
    assert not (tmp_path / "yc.duckdb").exists()


def test_a_missing_ca_file(tmp_path):
    result = run(config(tmp_path, 'ca_file = "certs/prometheus-ca.pem"'), tmp_path)
    one_line_error(result, "prometheus.ca_file: cannot read", f"{tmp_path / 'certs' / 'prometheus-ca.pem'}",
                   "No such file or directory")
    assert not (tmp_path / "yc.duckdb").exists()


def test_a_ca_file_that_is_a_folder(tmp_path):
    (tmp_path / "certs").mkdir()
    result = run(config(tmp_path, 'ca_file = "certs"'), tmp_path)
    one_line_error(result, f"prometheus.ca_file: {tmp_path / 'certs'} is a folder, not a file")
