from __future__ import annotations

import pytest

from searchgrade.engine.llm.replies import parse_reply
from searchgrade.engine.llm.schemas import JudgeReply


@pytest.mark.parametrize("text", [
    '{"grade": 4, "reason": "x"}',
    '{"grade": true, "reason": "x"}',
    '{"grade": "2", "reason": "x"}',
    '{"grade": 2}',
    '{"grade": 2, "reason": "x"',
    "",
])
def test_invalid_replies_are_not_grades(text):
    value, error = parse_reply(text, JudgeReply)
    assert value is None and error


def test_reply_in_code_fence_or_prose_is_parsed():
    assert parse_reply('```json\n{"grade": 2, "reason": "ok"}\n```', JudgeReply)[0].grade == 2
    assert parse_reply('Here: {"grade": 0, "reason": "no"} done', JudgeReply)[0].grade == 0
