"""The full-text tokenizer: lowercase Unicode word tokens, no stemming, no stopwords.

The text is lowercased and split with the regular expression ``\\w+`` (letters, digits and
underscore in any script; every other character separates tokens). Bump
``indexes.settings.TOKENIZER_VERSION`` whenever this changes: saved indexes depend on it.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercase Unicode ``\\w+`` tokens: "Café-au-lait, 2x!" -> ["café", "au", "lait", "2x"]."""
    return _TOKEN.findall(text.lower())
