"""The app's face of the outbound guard: the Evaluate page's LLM endpoint."""

from __future__ import annotations

import pytest

from searchgrade.server.outbound import OutboundRefused, TypedEndpoint, check_llm_endpoint, check_typed_url


def test_the_operators_llm_endpoints_pass_and_a_typed_one_is_guarded_and_marked_typed():
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "SEARCHGRADE_LLM_ALLOWED_URLS": "http://10.0.0.9/v1"}
    # The operator's: the configured endpoint, one of the allow-list, the configured one unchanged.
    assert check_llm_endpoint("http://127.0.0.1:8080/v1/", True, environ).declared_in == ""
    assert check_llm_endpoint("http://10.0.0.9/v1", True, environ).declared_in == ""
    assert check_llm_endpoint(None, True, environ) == TypedEndpoint(None, "")
    with pytest.raises(OutboundRefused, match="^LLM endpoint base URL: 169.254.169.254 is a link-local address"):
        check_llm_endpoint("http://169.254.169.254/v1", True, environ)
    with pytest.raises(OutboundRefused, match="127.0.0.1 is a loopback address"):
        check_llm_endpoint("http://127.0.0.1:9999/v1", True, environ)
    # A loopback app: the operator's keyboard, but still typed (its later connections are the app's).
    assert check_llm_endpoint(" http://127.0.0.1:9999/v1 ", False, environ) == TypedEndpoint(
        "http://127.0.0.1:9999/v1", "app")


def test_a_typed_url_is_one_line_with_the_fix():
    with pytest.raises(OutboundRefused) as info:
        check_typed_url("http://192.168.1.20/hook", True, "webhook url", {})
    assert str(info.value).startswith("webhook url: 192.168.1.20 is a private address")
    assert "SEARCHGRADE_BACKEND_ALLOWED_HOSTS=192.168.1.20" in str(info.value)
