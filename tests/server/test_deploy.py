from __future__ import annotations

import pytest

from searchgrade.server.deploy import is_exposed, is_loopback


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_addresses_are_not_exposed(address):
    assert is_loopback(address)
    assert not is_exposed(address)


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.5", "2001:db8::1"])
def test_other_addresses_are_exposed(address):
    assert is_exposed(address)


@pytest.mark.parametrize("address", [None, "", "  "])
def test_no_address_means_every_interface_so_exposed(address):
    # Streamlit binds every interface when server.address is unset.
    assert is_exposed(address)


def test_a_name_that_does_not_resolve_counts_as_exposed():
    assert is_exposed("no-such-host.invalid")
