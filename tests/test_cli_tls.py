"""TLS options that do not make a complete set are refused before anything connects (no switch needed)."""

from __future__ import annotations

import pytest

from controller.cli import main


@pytest.fixture
def pems(tmp_path):
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("x")
    return tmp_path


@pytest.mark.parametrize("opts, says", [
    (["--tls-cert", "{d}/client.pem", "--tls-key", "{d}/client.key"], "need --tls-ca"),
    (["--tls-key", "{d}/client.key"], "need --tls-ca"),
    (["--tls-ca", "{d}/ca.pem", "--tls-cert", "{d}/client.pem"], "go together"),
    (["--tls-ca", "{d}/ca.pem", "--tls-key", "{d}/client.key"], "go together"),
    (["--tls-ca", "{d}/missing.pem"], "no such file"),
    (["--tls-server-name", "switch"], "needs --tls-ca"),
])
def test_incomplete_tls_is_an_error_not_plaintext(pems, capsys, opts, says):
    args = [o.format(d=pems) for o in opts]
    # an address where nothing listens: the check must come first (a connection attempt would take seconds)
    assert main(["counters", "--address", "127.0.0.1:1", "--attempts", "1", *args]) == 2
    err = capsys.readouterr().err
    assert "config error" in err and says in err
