"""Versioned prompt files (engine/llm/prompts/*.txt) and how they are filled in.

A prompt file has a ``=== system ===`` section and a ``=== user ===`` section. Placeholders are
written ``{{name}}``; values are substituted once, so braces or placeholders inside a document
are never expanded. The prompt version stored with every grade and query is the file's stem and
the first 8 hex digits of the sha256 of its text (``judge_v1-1a2b3c4d``): editing a prompt file
without renaming it still yields a new version, so cached replies of the old text are not reused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from searchgrade.core.records import SearchGradeError

#: The prompt files ship beside this module, in the package.
PROMPTS_DIR = Path(__file__).resolve().parent

_SECTION = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    """A loaded prompt template."""

    name: str
    version: str
    system: str
    user: str

    def messages(self, **values: str) -> list[dict[str, str]]:
        """Chat messages with every placeholder filled in.

        Raises:
            ValueError: A placeholder has no value.
        """
        return [
            {"role": "system", "content": _fill(self.system, values, self.name)},
            {"role": "user", "content": _fill(self.user, values, self.name)},
        ]

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.system)) | set(_PLACEHOLDER.findall(self.user))


def load_prompt(name: str, directory: Path | None = None) -> Prompt:
    """Load ``<directory>/<name>.txt`` (default: the packaged prompts)."""
    path = (directory or PROMPTS_DIR) / f"{name}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SearchGradeError(
            f"cannot read the prompt file {path}: {exc.strerror}; reinstall searchgrade or pass an "
            "existing prompt name"
        ) from None
    return parse_prompt(name, text, source=str(path))


def parse_prompt(name: str, text: str, source: str = "<string>") -> Prompt:
    """A Prompt from the text of a prompt file."""
    parts = _SECTION.split(text)
    # split() gives [preamble, "system", body, "user", body]; the preamble is a comment.
    sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2]), strict=True))
    if set(sections) != {"system", "user"} or len(parts) != 5:
        raise SearchGradeError(
            f"prompt file {source} needs exactly one '=== system ===' and one '=== user ===' line"
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return Prompt(name=name, version=f"{name}-{digest}", system=sections["system"], user=sections["user"])


def _fill(template: str, values: dict[str, str], name: str) -> str:
    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ValueError(f"prompt {name} needs a value for {{{{{key}}}}}")
        return values[key]

    return _PLACEHOLDER.sub(substitute, template)


_TAG = re.compile(r"<\s*(/?)\s*(document|query)\b", re.IGNORECASE)


def neutralise_tags(text: str) -> str:
    """Defang ``<document>``/``<query>`` tags (opening or closing) inside untrusted text.

    The prompt delimits data with these tags; a document that contains ``</document>`` could
    otherwise end the data block early and smuggle instructions after it.
    """
    return _TAG.sub(lambda m: f"[{m.group(1)}{m.group(2).lower()}", text)


#: Placeholders a judge prompt must have (and the only ones it may have).
JUDGE_PLACEHOLDERS = frozenset({"query", "document"})
_GRADE = re.compile(r"(?<![\w.])([0-3])(?!\w|\.\d)")
_OTHER_SCALE = re.compile(r"(?<![\w.])(?:0|1)\s*(?:-|–|to)\s*(?:[4-9]|10|100)(?!\w|\.\d)", re.IGNORECASE)


#: A judge prompt file bigger than this is refused (the packaged one is ~1 KB); it bounds what an
#: upload in the app may hold, and the command line reads no more either.
MAX_JUDGE_PROMPT_BYTES = 64 * 1024


def other_scale(text: str) -> str | None:
    """The words in ``text`` that describe a scale beyond 0-3 ("1-5", "0 to 10"), or None: what a
    judge prompt may not hold (data placed in one, such as a calibrated prompt's examples, neither)."""
    match = _OTHER_SCALE.search(text)
    return match.group(0) if match else None


def read_judge_prompt(path: str | Path) -> tuple[str, str]:
    """The name (the file's stem) and text of a user's judge prompt file, validated
    (:func:`judge_prompt_from_bytes`).

    Raises:
        SearchGradeError: The file cannot be read or is not such a prompt (one line saying why).
    """
    source = Path(path)
    where = f"--judge-prompt {source}"
    try:
        with source.open("rb") as file:
            data = file.read(MAX_JUDGE_PROMPT_BYTES + 1)
    except OSError as exc:
        raise SearchGradeError(f"cannot read {where}: {exc.strerror}; pass an existing prompt file "
                               "(copy engine/llm/prompts/judge_v1.txt and edit it)") from None
    return judge_prompt_from_bytes(source.name, data, where)


def judge_prompt_from_bytes(filename: str, data: bytes, where: str) -> tuple[str, str]:
    """The name (the stem of ``filename``) and text of a judge prompt file's content, validated.

    The one check of a user's judge prompt, for ``--judge-prompt FILE`` and the app's upload alike.
    The file has the format of engine/llm/prompts/judge_v1.txt: a comment line, ``=== system ===``,
    ``=== user ===``, and exactly the placeholders ``{{query}}`` and ``{{document}}``. It must
    state the 0-3 scale: each of the grades 0, 1, 2 and 3 written in it, no scale reaching beyond
    3 ("1-5", "0 to 10"), and the word "grade" (the reply is JSON ``{"grade": ..., "reason": ...}``,
    validated as the packaged prompt's replies are). At most MAX_JUDGE_PROMPT_BYTES, UTF-8; line
    ends are read as a text file reads them (CRLF as LF), so the version does not depend on them.

    Args:
        where: How messages name the file (``--judge-prompt PATH``, or the uploaded file's name).

    Raises:
        SearchGradeError: Not such a prompt (one line saying why).
    """
    if len(data) > MAX_JUDGE_PROMPT_BYTES:
        raise SearchGradeError(f"{where} is larger than {MAX_JUDGE_PROMPT_BYTES // 1024} KB: a judge prompt "
                               "is instructions, not data; shorten it (the packaged one is ~1 KB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SearchGradeError(f"{where} is not UTF-8 text: save the prompt as UTF-8") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    prompt = parse_prompt(Path(filename).stem, text, source=where)
    placeholders = prompt.placeholders
    missing = sorted(JUDGE_PLACEHOLDERS - placeholders)
    if missing:
        raise SearchGradeError(f"{where} lacks {', '.join('{{' + m + '}}' for m in missing)}: a judge prompt "
                               "needs {{query}} and {{document}} where the pair to grade goes")
    extra = sorted(placeholders - JUDGE_PLACEHOLDERS)
    if extra:
        raise SearchGradeError(f"{where} has {', '.join('{{' + e + '}}' for e in extra)}, which the judge "
                               "cannot fill: use only {{query}} and {{document}}")
    body = f"{prompt.system}\n{prompt.user}"
    other = other_scale(body)
    if other:
        raise SearchGradeError(f"{where} describes a scale beyond 0-3 ({other!r}): the judge grades "
                               "0-3; describe grades 0, 1, 2 and 3")
    grades = {int(m.group(1)) for m in _GRADE.finditer(body)}
    absent = [str(g) for g in range(4) if g not in grades]
    if absent:
        raise SearchGradeError(f"{where} never writes grade {', '.join(absent)}: describe the 0-3 scale "
                               "(what 0, 1, 2 and 3 mean), as engine/llm/prompts/judge_v1.txt does")
    if "grade" not in body.lower():
        raise SearchGradeError(f"{where} never says 'grade': ask for a JSON reply "
                               '{"grade": <0-3>, "reason": "..."} as engine/llm/prompts/judge_v1.txt does')
    return prompt.name, text
