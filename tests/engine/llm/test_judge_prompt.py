"""`--judge-prompt FILE`: the user's judge prompt, validated, hashed into the cache key and shown
with the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.prompts import (
    MAX_JUDGE_PROMPT_BYTES,
    PROMPTS_DIR,
    judge_prompt_from_bytes,
    read_judge_prompt,
)
from searchgrade.engine.store import Store
from tests.cli.test_llm_cli import _no_llm_environment, _one_line_error, llm_args  # noqa: F401
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder

PACKAGED = (PROMPTS_DIR / "judge_v1.txt").read_text(encoding="utf-8")
#: The packaged prompt with one more instruction: the fake server still recognises a judge request
#: ("search quality rater") and finds the <query> and <document> blocks.
STRICT = PACKAGED.replace("Work through it:", "Be strict: grade 3 only for a complete answer. Work through it:")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_prompt_file_gives_its_stem_and_text(tmp_path):
    assert read_judge_prompt(_write(tmp_path, "strict_judge.txt", STRICT)) == ("strict_judge", STRICT)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (PACKAGED.replace("{{document}}", "the document"), "lacks {{document}}"),
        (PACKAGED.replace("{{query}}", "{{question}}"), "lacks {{query}}"),
        (PACKAGED + "\nContext: {{collection}}", "{{collection}}, which the judge cannot fill"),
        (PACKAGED.replace("0-3 scale", "1-5 scale"), "scale beyond 0-3 ('1-5')"),
        (PACKAGED.replace("0 = the document is unrelated to the query.\n", "").replace("<0, 1, 2 or 3>", "<1, 2 or 3>")
         .replace("0-3 scale", "scale"), "never writes grade 0"),
        (PACKAGED.replace("=== system ===", ""), "exactly one '=== system ==='"),
    ],
)
def test_bad_prompt_files_are_refused_with_the_reason(tmp_path, text, fragment):
    with pytest.raises(SearchGradeError, match=None) as info:
        read_judge_prompt(_write(tmp_path, "p.txt", text))
    assert fragment in str(info.value)


def test_an_unreadable_prompt_file_is_refused(tmp_path):
    with pytest.raises(SearchGradeError, match="cannot read --judge-prompt"):
        read_judge_prompt(tmp_path / "missing.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(SearchGradeError, match="not UTF-8"):
        read_judge_prompt(tmp_path / "bin.txt")


def test_line_ends_do_not_change_the_prompt_and_a_huge_file_is_refused(tmp_path):
    (tmp_path / "crlf.txt").write_bytes(STRICT.replace("\n", "\r\n").encode())
    assert read_judge_prompt(tmp_path / "crlf.txt") == ("crlf", STRICT)
    assert judge_prompt_from_bytes("crlf.txt", STRICT.encode(), "upload") == ("crlf", STRICT)
    (tmp_path / "huge.txt").write_bytes(STRICT.encode() + b"#" * MAX_JUDGE_PROMPT_BYTES)
    with pytest.raises(SearchGradeError, match=r"^--judge-prompt \S+huge.txt is larger than 64 KB"):
        read_judge_prompt(tmp_path / "huge.txt")


def test_the_judge_uses_the_users_prompt_its_hash_keys_the_cache_and_the_run_shows_it(
    tmp_path, tiny_beir, capsys
):
    prompt_file = _write(tmp_path, "strict_judge.txt", STRICT)
    recorder = Recorder()
    seen: list[str] = []

    def responder(body, n):
        if "search quality rater" in body["messages"][0]["content"]:
            seen.append(body["messages"][1]["content"])
        return recorder(body, n)

    data = tmp_path / "d"
    with FakeOpenAIServer(responder) as server:
        assert main(llm_args(tiny_beir, data, server.base_url)) == 0
        default_run = capsys.readouterr().out.strip().splitlines()[-1]
        default_calls = len(seen)
        assert default_calls and not any("Be strict" in text for text in seen)
        # The user's prompt: no judge reply of the packaged prompt is reused from the cache.
        assert main(llm_args(tiny_beir, data, server.base_url, "--judge-prompt", str(prompt_file))) == 0
        custom_run = capsys.readouterr().out.strip().splitlines()[-1]
        assert len(seen) == 2 * default_calls
        assert all("Be strict" in text for text in seen[default_calls:])
        # The same prompt again: every judgment from the cache.
        assert main(llm_args(tiny_beir, data, server.base_url, "--judge-prompt", str(prompt_file))) == 0
        assert len(seen) == 2 * default_calls
    store = Store(data)
    versions = {g["prompt_version"] for g in store.grades(custom_run)}
    assert len(versions) == 1 and versions.pop().startswith("strict_judge-")
    assert {g["prompt_version"] for g in store.grades(default_run)} != {g["prompt_version"] for g in
                                                                         store.grades(custom_run)}
    capsys.readouterr()
    assert main(["show", custom_run, "--data-dir", str(data)]) == 0
    assert "judge prompt strict_judge-" in capsys.readouterr().out
    assert store.get_run(custom_run).config["judge"]["prompt_text"] == STRICT


def test_a_bad_prompt_file_is_a_one_line_error_before_any_run(tmp_path, tiny_beir, capsys):
    bad = _write(tmp_path, "p.txt", PACKAGED.replace("{{query}}", "the query"))
    code = main(llm_args(tiny_beir, tmp_path / "d", "http://127.0.0.1:9/v1", "--judge-prompt", str(bad)))
    assert "lacks {{query}}" in _one_line_error(capsys, code)
    assert not (tmp_path / "d" / "searchgrade.duckdb").exists() or Store(tmp_path / "d").list_runs() == []


def test_judge_prompt_goes_with_llm(tmp_path, tiny_beir, capsys):
    code = main(["evaluate", str(tiny_beir), "--qrels", "--judge-prompt", "x.txt", "--data-dir", str(tmp_path / "d")])
    assert "--judge-prompt goes with --llm" in _one_line_error(capsys, code)


def test_a_resumed_run_judges_with_the_stored_prompt_text_not_the_file(tmp_path):
    from searchgrade.engine.llm.judge import JudgeSettings, judge_prompt
    from searchgrade.engine.run.config import RunConfig

    name, text = read_judge_prompt(_write(tmp_path, "strict_judge.txt", STRICT))
    stored = RunConfig(mode="llm", judge=JudgeSettings(prompt=name, prompt_text=text)).to_json()
    (tmp_path / "strict_judge.txt").write_text(PACKAGED, encoding="utf-8")  # the file changes later
    resumed = judge_prompt(RunConfig.from_json(stored).judge)
    assert resumed.version == judge_prompt(JudgeSettings(prompt=name, prompt_text=STRICT)).version
    assert "Be strict" in resumed.messages(query="q", document="d")[1]["content"]
