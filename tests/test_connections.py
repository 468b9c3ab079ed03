"""Every input a browser can change that makes the server connect goes through the outbound guard.

Read from the source, as tests/test_layers.py reads imports:

1. **Where the server connects.** Every call in the package that opens a network connection is
   listed here: either it takes its policy from where its target was typed (core/outbound.py's
   ``policy_for``, the one choke point: ``declared_in`` is recorded with every target a browser can
   set, and the connection is made through the policy it names), and the function that applies
   the policy is named and checked to do so; or no browser input can choose its target, and why.
2. **What the pages take.** Every text a page takes (text inputs and areas) is listed: a target
   the server connects to, driven in Chromium against a loopback listener on an exposed app
   (tests/browser/test_exposed.py ``DRIVEN``); or not a target, and what it is.
3. **What the store keeps.** Every record that keeps a target a browser set keeps where it was
   typed, so the policy holds wherever it is used again (a resume, a suite, tuning, the CLI).

A new connection, field or record fails here until it is classified, and a target field until the
browser test drives it.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("core", "indexes", "engine", "viewmodels", "server", "cli", "views")

#: Calls that open a network connection (resolved through the module's imports); a name ending in
#: "." stands for every name under it.
CONNECTORS = (
    "requests.Session", "requests.request", "requests.get", "requests.post", "requests.put", "requests.patch",
    "requests.delete", "requests.head", "openai.OpenAI", "openai.AsyncOpenAI", "openai.DefaultHttpxClient",
    "openai.DefaultAsyncHttpxClient", "httpx.", "httpx2.", "urllib3.", "aiohttp.", "urllib.request.urlopen",
    "http.client.", "smtplib.SMTP", "socket.create_connection", "socket.socket", "psycopg.connect",
    "psycopg2.connect", "pymilvus.MilvusClient", "pymilvus.connections", "lancedb.connect", "ray.init",
    "huggingface_hub.hf_hub_download", "huggingface_hub.snapshot_download", "sentence_transformers.SentenceTransformer",
    "sentence_transformers.CrossEncoder", "sentence_transformers.cross_encoder.CrossEncoder",
    "searchgrade.indexes.hub.load_pretrained", "websockets.", "ftplib.", "imaplib.", "poplib.", "telnetlib.",
)


class Guarded(NamedTuple):
    """A connection whose target a browser can set: ``function`` (module, qualified name) applies
    the policy, and its source holds ``applies``."""

    module: str
    function: str
    applies: str


class Operators(NamedTuple):
    """A connection to a target no page can choose."""

    why: str


HUB = Operators("the model hub the operator configures (HF_ENDPOINT, HF_HUB_OFFLINE): a model name typed on "
                "a page picks a model there, never a host")
RAY = Operators("a Ray cluster: `--ray ADDRESS` on the command line; no page takes an address")

SITES: dict[tuple[str, str], Guarded | Operators] = {
    ("core/outbound.py", "OutboundPolicy.create_connection"):
        Guarded("core/outbound.py", "OutboundPolicy.create_connection", "self.resolve(host, port, what)"),
    ("core/outbound.py", "OutboundPolicy.session"):
        Guarded("core/outbound.py", "OutboundPolicy.session", "_guarded_adapter(self)"),
    ("core/outbound.py", "_guarded_httpx_transport"):
        Guarded("core/outbound.py", "_guarded_httpx_transport", "policy.check_host(host, port, host)"),
    ("indexes/declared/http.py", "guarded_session"):
        Guarded("indexes/declared/http.py", "guarded_session", "policy.session()"),
    ("indexes/declared/lancedb.py", "connect"):
        Guarded("indexes/declared/lancedb.py", "build_node", "check_typed(spec, policy)"),
    ("indexes/declared/milvus.py", "connect"):
        Guarded("indexes/declared/milvus.py", "build_node", "check_typed(spec, policy)"),
    ("indexes/declared/postgres/connection.py", "connect"):
        Guarded("indexes/declared/postgres/connection.py", "conninfo", "check_typed(spec, policy)"),
    ("engine/alerts/channels.py", "send_webhook"):
        Guarded("engine/alerts/channels.py", "send_webhook", "policy_for(declared_in or '')"),
    ("engine/llm/client.py", "LLMClient._openai_client"):
        Guarded("engine/llm/client.py", "LLMClient._openai_client", "policy_for(self.settings.declared_in)"),
    ("indexes/declared/postgres/export.py", "export_table"):
        Operators("`searchgrade export-index` on the command line: its DSN is the operator's"),
    ("engine/alerts/channels.py", "_session"):
        Operators("SMTP: the server is SEARCHGRADE_SMTP_HOST, from the environment only; a page types a "
                  "recipient's address"),
    ("indexes/hub.py", "hub_reachable"): HUB,
    ("indexes/rerank/cross_encoder.py", "load_reranker"): HUB,
    ("indexes/embeddings/encoder.py", "_load_embedder"): HUB,
    ("indexes/rerank/trained.py", "load_cross_encoder"):
        Operators("a reranker trained into the data directory, loaded with local_files_only"),
    ("engine/training/trainer.py", "new_cross_encoder"):
        Operators("a local model folder (check_body), never a name on the hub"),
    ("engine/ray/session.py", "check_reachable"): RAY,
    ("engine/ray/session.py", "connect"): RAY,
    ("engine/ray/session.py", "_init_within.init"): RAY,
}


def _imports(tree: ast.AST) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _scoped_calls(tree: ast.AST):
    """(qualified name of the enclosing function or class, call node) for every call."""
    def visit(node: ast.AST, scope: list[str]):
        for child in ast.iter_child_nodes(node):
            inner = scope + [child.name] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else scope
            if isinstance(child, ast.Call):
                yield ".".join(scope), child
            yield from visit(child, inner)

    yield from visit(tree, [])


def _connects(name: str) -> bool:
    if name.rsplit(".", 1)[-1].endswith(("Error", "Exception", "Warning")):
        return False  # an exception class raised, not a connection made
    if name.startswith("transformers.") and name.endswith(".from_pretrained"):
        return True
    return any(name == c or (c.endswith(".") and name.startswith(c)) for c in CONNECTORS)


def connection_sites() -> dict[tuple[str, str], set[str]]:
    """(module, enclosing function) -> the connecting calls in it."""
    found: dict[tuple[str, str], set[str]] = {}
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = _imports(tree)
            for scope, call in _scoped_calls(tree):
                parts = _dotted(call.func)
                if not parts:
                    continue
                name = ".".join([names.get(parts[0], parts[0]), *parts[1:]])
                if _connects(name):
                    found.setdefault((str(path.relative_to(ROOT)), scope), set()).add(name)
    return found


def function_source(module: str, qualname: str) -> str:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    node: ast.AST = tree
    for part in qualname.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part)
    return ast.unparse(node)


def test_the_scan_finds_connections_in_functions_and_through_import_aliases():
    # A guard that cannot fail is no guard: the scan sees a lazy `import requests` in a function,
    # a `from ... import` of a class, and a module alias.
    sites = connection_sites()
    assert sites[("engine/alerts/channels.py", "send_webhook")] == {"requests.Session"}
    assert "openai.OpenAI" in sites[("engine/llm/client.py", "LLMClient._openai_client")]
    assert sites[("indexes/declared/lancedb.py", "connect")] == {"lancedb.connect"}


def test_every_connection_is_guarded_or_reached_by_no_browser_input():
    sites = connection_sites()
    unknown = {f"{module}::{scope}": sorted(calls) for (module, scope), calls in sites.items() if (module, scope) not in SITES}
    assert unknown == {}, (
        "a new place opens connections: if a browser can set its target, record where the target was typed "
        "(declared_in) and connect through core/outbound.py's policy_for; then list it in SITES")
    assert sorted(set(SITES) - set(sites)) == []  # a listed place is gone: update SITES


@pytest.mark.parametrize("site", [k for k, v in SITES.items() if isinstance(v, Guarded)], ids="::".join)
def test_each_guarded_connection_applies_the_policy(site):
    guard = SITES[site]
    assert guard.applies in function_source(guard.module, guard.function)


# -- what the pages take -------------------------------------------------------------------------------

TEXT_WIDGETS = ("text_input", "text_area", "chat_input", "data_editor")

#: Fields whose text makes the server connect somewhere: each is driven in Chromium on an exposed
#: app against a loopback listener (tests/browser/test_exposed.py DRIVEN), and goes through
#: server/outbound.py on its way (check_llm_endpoint, check_typed_url, the kinds' check_typed).
TARGETS = {
    ("views/_evaluate_llm.py", "Endpoint base URL"): "the LLM endpoint of a new run",
    ("views/_evaluate_llm.py", "Judges (optional): a panel, each grading every result"):
        "a panel's judges, each NAME@URL an LLM endpoint (check_judge_endpoints)",
    ("views/_common.py", "LLM endpoint base URL (change it if the server moved)"): "the Resume form's endpoint",
    ("views/_add_search.py", "<label>"): "Add your search: a backend's url, host, uri or dsn (each kind's keys)",
    ("views/suites.py", "Webhook URL (POST JSON with a text field; empty keeps it)"): "a suite's alert webhook",
}
NOT_TARGETS = {
    ("views/_evaluate_llm.py", "Model"): "the LLM's model name, sent to the endpoint above",
    ("views/_evaluate_llm.py", "Judge prices (optional), US dollars per million tokens"): "MODEL=PRICE pairs",
    ("views/_index_settings.py", "Embedding model (name or local path)"): HUB.why,
    ("views/_index_settings.py", "Reranker model (cross-encoder name or local path)"): HUB.why,
    ("views/evaluate.py", "Run name (optional)"): "a name",
    ("views/_add_search.py", "Name"): "the strategy's name",
    ("views/_collection.py", "Path"): "a local path, inside the collections root on an exposed app",
    ("views/_login.py", "Password"): "the login's password",
    ("views/_rating.py", "Your name, to rate results (asked once; stored with each of your ratings)"): "a name",
    ("views/_rating.py", "Note (optional, saved with your grade)"): "a note",
    ("views/review.py", "Note (optional, saved with your grade)"): "a note",
    ("views/_reranker.py", "Name"): "the trained reranker's name",
    ("views/_suite_actions.py", "Suite name"): "a name",
    ("views/suites.py", "Note (shown on the trend and in alerts)"): "a note",
    ("views/suites.py", 'Interval (30s, 6h, 1d) or cron expression ("0 2 * * *": 02:00 UTC daily)'): "a schedule",
    ("views/suites.py", "Email address (empty keeps it)"): "a recipient; the SMTP server is the operator's",
}


def page_fields() -> set[tuple[str, str]]:
    """(module, label) of every text a page takes: the label's text, or ``<expression>`` for one
    computed (Add your search: each kind's keys)."""
    found = set()
    for path in sorted((ROOT / "views").rglob("*.py")):
        for _, call in _scoped_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(call.func, ast.Attribute) and call.func.attr in TEXT_WIDGETS and call.args:
                label = call.args[0]
                text = label.value if isinstance(label, ast.Constant) else f"<{ast.unparse(label)}>"
                found.add((str(path.relative_to(ROOT)), text))
    return found


def test_every_text_a_page_takes_is_a_guarded_target_or_not_a_target():
    fields = page_fields()
    assert ("views/_common.py", "LLM endpoint base URL (change it if the server moved)") in fields
    unknown = sorted(fields - set(TARGETS) - set(NOT_TARGETS))
    assert unknown == [], ("a page takes a new text: if the server connects to what is typed, check it with "
                           "server/outbound.py, record where it was typed, and drive it in tests/browser/test_exposed.py")
    assert sorted((set(TARGETS) | set(NOT_TARGETS)) - fields) == []  # a listed field is gone


def test_every_target_field_is_driven_against_a_listener_in_the_browser():
    from tests.browser.test_exposed import DRIVEN

    assert set(DRIVEN) == set(TARGETS)


# -- what the store keeps ------------------------------------------------------------------------------

def test_every_record_with_a_target_a_browser_sets_keeps_where_it_was_typed():
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.store import SuiteRecord
    from searchgrade.indexes.declared.declaration import StrategySpec
    from searchgrade.indexes.declared.rerankers import RerankerSpec

    records = {LLMSettings: "declared_in", StrategySpec: "declared_in", RerankerSpec: "declared_in",
               SuiteRecord: "alerts_declared_in"}
    for record, field in records.items():
        assert field in {f.name for f in dataclasses.fields(record)}, record
