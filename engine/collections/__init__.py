"""Loading a collection (documents, and where present queries and judgments) from disk.

``load_collection`` accepts three shapes of input, chosen by what the path is:

- a BEIR-layout folder: ``corpus.jsonl``, optional ``queries.jsonl`` and judgments in ``qrels.tsv``
  (preferred) or ``qrels/test.tsv``;
- one file of documents: ``.jsonl``, ``.csv``, ``.tsv`` or ``.parquet``, with its id, title and
  text columns given or guessed (``fields``), and optionally a queries file and a judgments file
  (BEIR TSV or TREC qrels) beside it;
- a folder of ``.txt`` / ``.md`` files, walked within limits (``textfolder``).

Files are read as streams (``readers``). Bad input raises ``SearchGradeError`` with one line naming
the file and line (or row), what was wrong and the fix, phrased for the command line (the flag to
change) and for the app (the picker to change; ``page_message``), with files named as the user gave
them (``problems``). Recoverable oddities (empty documents, judgments of skipped or unknown
documents, which count as trec_eval counts them, negative grades, queries with empty text) are
handled and reported in ``Collection.notes``.

Modules: ``loader`` (the entry point), ``readers``, ``fields``, ``documents``, ``queries``,
``qrels``, ``textfolder``, ``problems``, ``preview`` (what the app shows before loading),
``judgments`` (a judgments file and its queries apart from a collection: a training split).
"""

from searchgrade.engine.collections.fields import DocumentFields, QueryFields
from searchgrade.engine.collections.judgments import load_judgments
from searchgrade.engine.collections.loader import QRELS_CANDIDATES, SUPPORTED, load_collection
from searchgrade.engine.collections.problems import KNOBS, QRELS_FILE, QUERIES_FILE, Shown
from searchgrade.engine.collections.qrels import QRELS_HEADER, default_threshold, grade_scale
from searchgrade.engine.collections.readers import RECORD_SUFFIXES
from searchgrade.engine.collections.textfolder import TEXT_SUFFIXES, FolderLimits

#: Single-file corpora.
DOCUMENT_SUFFIXES = RECORD_SUFFIXES

__all__ = [
    "DOCUMENT_SUFFIXES",
    "KNOBS",
    "QRELS_CANDIDATES",
    "QRELS_FILE",
    "QRELS_HEADER",
    "QUERIES_FILE",
    "SUPPORTED",
    "TEXT_SUFFIXES",
    "DocumentFields",
    "FolderLimits",
    "QueryFields",
    "Shown",
    "default_threshold",
    "grade_scale",
    "load_collection",
    "load_judgments",
]
