from __future__ import annotations

from searchgrade.engine.llm.settings import LLMSettings


def test_stored_settings_drop_credentials_in_the_url():
    settings = LLMSettings(model="m", base_url="http://user:pw@127.0.0.1:8080/v1")
    assert settings.to_json()["base_url"] == "http://127.0.0.1:8080/v1"
