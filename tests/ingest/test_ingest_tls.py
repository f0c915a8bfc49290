"""`yolocost ingest` over HTTPS: the config's TLS settings win over the environment's.

requests lets REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE replace a session's CA file, and turns
`verify=False` back on, so a CA bundle set for some other tool silently overrode
`[prometheus] ca_file` and `insecure_skip_verify`. A real Prometheus serves the fixture hour
over TLS (`--web.config.file` with `tls_server_config`) with the test certificates in tls/
(README there): a server certificate signed by tls/ca.pem for 127.0.0.1, and an unrelated
tls/other-ca.pem that must not verify it.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from helpers import promserver
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

TLS = Path(__file__).resolve().parent / "tls"
CA, OTHER_CA = TLS / "ca.pem", TLS / "other-ca.pem"


class TlsPrometheus(promserver.PrometheusServer):
    """The harness' Prometheus, serving HTTPS with the test certificate."""

    def __init__(self, data_dir):
        web = f"tls_server_config:\n  cert_file: '{TLS / 'server.pem'}'\n  key_file: '{TLS / 'server-key.pem'}'\n"
        super().__init__(data_dir, copy=True, web_config=web)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def ssl_context(self):
        return ssl.create_default_context(cafile=str(CA))


@pytest.fixture(scope="module")
def https(backfilled):
    with TlsPrometheus(backfilled("full")) as server:
        yield server


def _same_rows_as_plain_http(db: Path, good_db: Path) -> None:
    assert h.snapshot(db, skip=("loads",)) == h.snapshot(good_db, skip=("loads",))


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_ca_file_wins_over_a_ca_bundle_in_the_environment(yc, good_db, tmp_path, https, variable):
    config = yc.config(https.url, prometheus=f"ca_file = '{CA}'")
    db = tmp_path / "tls.duckdb"
    result = yc.ingest(config, db, env={variable: str(OTHER_CA)})
    h.assert_ok(result)
    _same_rows_as_plain_http(db, good_db)


def test_insecure_skip_verify_wins_over_a_ca_bundle_in_the_environment(yc, good_db, tmp_path, https):
    config = yc.config(https.url, prometheus="insecure_skip_verify = true")
    db = tmp_path / "tls.duckdb"
    result = yc.ingest(config, db, env={"REQUESTS_CA_BUNDLE": str(OTHER_CA)})
    h.assert_ok(result)
    _same_rows_as_plain_http(db, good_db)


def test_a_ca_bundle_in_the_environment_serves_when_the_config_names_none(yc, good_db, tmp_path, https):
    db = tmp_path / "tls.duckdb"
    result = yc.ingest(yc.config(https.url), db, env={"REQUESTS_CA_BUNDLE": str(CA)})
    h.assert_ok(result)
    _same_rows_as_plain_http(db, good_db)


def test_a_wrong_ca_file_is_not_rescued_by_the_environment(yc, prior_db, https):
    config = yc.config(https.url, prometheus=f"ca_file = '{OTHER_CA}'")
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db, env={"REQUESTS_CA_BUNDLE": str(CA)})
    h.assert_one_line_error(result, f"TLS error talking to Prometheus at {https.url}", "CERTIFICATE_VERIFY_FAILED")
