from __future__ import annotations

import pytest

from tests.browser.server import chromium


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (tests open their own pages)."""
    with chromium() as launched:
        yield launched
