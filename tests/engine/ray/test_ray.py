"""Runs on Ray (engine/ray/: the RayRunner and its parts) against a real local Ray on 2 CPUs,
started once for the folder (conftest.py); judging on Ray is test_ray_judging.py's.

The claims: a run on Ray stores what the local run stores (Cranfield, all six strategies: the
same result lists, the same per-query metrics to 1e-9, the same document vectors), the packaged
embedding model gives the same vectors on Ray Data as here, and a wrong address fails in seconds
with one line and writes nothing.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.ray.data_embedding import embed_on_ray
from searchgrade.engine.ray.session import check_reachable, connect, import_ray, ray_session
from searchgrade.engine.ray.stage_runner import RayRunner
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.run.strategies import known_strategies
from searchgrade.engine.store import Store
from searchgrade.indexes.embeddings.encoder import EmbeddingCache, cache_dir_for, encode_cached, text_key
from searchgrade.indexes.settings import DEFAULT_EMBEDDING_MODEL, IndexSettings
from tests.conftest import CRANFIELD, REPO
from tests.engine.ray.conftest import evaluate
from tests.indexes.conftest import tiny_cross_encoder_dir  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_embedder(tmp_path_factory) -> Path:
    """A 2-layer, 32-wide BERT sentence-transformer over Cranfield's words (random weights): a
    real SentenceTransformer that embeds Cranfield in seconds, so both runs embed from scratch."""
    import torch
    from sentence_transformers import SentenceTransformer
    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers before 6
        from sentence_transformers.models import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    words = Counter(w for d in load_collection(CRANFIELD).documents
                    for w in re.findall(r"[a-z]+", d.content.lower()))
    bert = tmp_path_factory.mktemp("tiny_bert")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(w for w, _ in words.most_common(3000))]
    (bert / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256)
    BertModel(config).save_pretrained(bert)
    BertTokenizer(str(bert / "vocab.txt")).save_pretrained(bert)
    word = Transformer(str(bert), max_seq_length=256)
    out = tmp_path_factory.mktemp("tiny_embedder")
    SentenceTransformer(modules=[word, Pooling(config.hidden_size, "mean")]).save(str(out))
    return out


def test_a_ray_run_stores_what_the_local_run_stores_on_cranfield(local_ray, tmp_path, tiny_embedder,
                                                                  tiny_cross_encoder_dir):  # noqa: F811
    collection = load_collection(CRANFIELD)
    settings = IndexSettings(embedding_model=str(tiny_embedder), reranker_model=str(tiny_cross_encoder_dir),
                             rerank_depth=10)
    config = RunConfig(strategies=known_strategies(), n_bootstrap=200, index=settings)
    runs = {}
    for where in ("local", "ray"):
        store, outcome = evaluate(where, collection, config, tmp_path)
        assert outcome.status == "complete" and not outcome.skipped
        runs[where] = (store, outcome.run_id)

    (local, local_id), (on_ray, ray_id) = runs["local"], runs["ray"]
    stats = on_ray.get_run(ray_id).stats
    n_queries = stats["queries"]
    # Every document embedded on Ray Data, every query searched on the Ray actors, in the local chunks.
    assert stats["ray"]["embed"]["embedded"] == len({d.content for d in collection.documents})
    assert stats["index"]["embedded"] == 0
    assert stats["ray"]["search"]["chunks"] == 1 + -(-(n_queries - 1) // 64)
    assert stats["ray"]["search"]["actors"] == 2
    assert stats["reranker_pairs"] == local.get_run(local_id).stats["reranker_pairs"]

    # The same vectors: Ray Data's actors encoded the same batches as encode_cached here.
    keys = [text_key(d.content) for d in collection.documents]
    vectors = [EmbeddingCache(cache_dir_for(tmp_path / w, settings.embedding_model)).get(keys) for w in runs]
    assert all(np.array_equal(vectors[0][k], vectors[1][k]) for k in keys)

    # The same result lists (ids, ranks, scores) for every strategy and query...
    local_hits, ray_hits = local.stored_hits(local_id), on_ray.stored_hits(ray_id)
    assert set(local_hits) == set(ray_hits) and len(local_hits) == 6 * n_queries
    for key, hits in local_hits.items():
        assert [(d.doc_id, d.rank) for d in ray_hits[key].docs] == [(d.doc_id, d.rank) for d in hits.docs], key
        assert [d.score for d in ray_hits[key].docs] == pytest.approx([d.score for d in hits.docs], abs=1e-9)
    # ... and the same metric for every query, strategy and cut-off.
    def values(store, run_id):
        return {(r["strategy"], r["metric"], r["k"], r["query_id"]): r["value"]
                for r in store.metric_values(run_id)}

    local_values, ray_values = values(local, local_id), values(on_ray, ray_id)
    assert set(local_values) == set(ray_values) and len(local_values) > 6 * n_queries * 10
    for key, value in local_values.items():
        assert ray_values[key] == pytest.approx(value, abs=1e-9), key


def test_the_packaged_model_embeds_the_same_on_ray_data_as_here(local_ray, tmp_path):
    # 150 texts: two chunks (128 + 22), so two actors each encode one, as encode_cached cuts them
    # (the start of each document only: the claim is the same either way, and this is quicker).
    texts = [d.content[:200] for d in load_collection(CRANFIELD).documents[:150]]
    session = connect(None)
    done = embed_on_ray(session, DEFAULT_EMBEDDING_MODEL, texts, tmp_path / "ray", batch_size=32)
    assert (done.embedded, done.cache_hits, done.actors) == (150, 0, 2)
    here, _ = encode_cached(DEFAULT_EMBEDDING_MODEL, texts, tmp_path / "here", 32)
    cached = EmbeddingCache(tmp_path / "ray").get([text_key(t) for t in texts])
    assert np.array_equal(np.stack([cached[text_key(t)] for t in texts]), here)
    again = embed_on_ray(session, DEFAULT_EMBEDDING_MODEL, texts, tmp_path / "ray", batch_size=32)
    assert (again.embedded, again.cache_hits) == (0, 150)


def test_the_int8_backend_embeds_the_same_on_ray_data_as_here(local_ray, tmp_path):
    # int8 activations are quantized per batch: the same chunks and batches give the same vectors.
    pytest.importorskip("onnxruntime")
    texts = [d.content[:200] for d in load_collection(CRANFIELD).documents[:150]]
    here, _ = encode_cached(DEFAULT_EMBEDDING_MODEL, texts, tmp_path / "here", 32, backend="onnx-int8",
                            device="cpu", models_dir=tmp_path)
    done = embed_on_ray(connect(None), DEFAULT_EMBEDDING_MODEL, texts, tmp_path / "ray", batch_size=32,
                        backend="onnx-int8", device="cpu", models_dir=tmp_path)
    assert done.embedded == 150
    cached = EmbeddingCache(tmp_path / "ray").get([text_key(t) for t in texts])
    assert np.array_equal(np.stack([cached[text_key(t)] for t in texts]), here)


def test_a_wrong_address_fails_in_seconds_with_one_line_and_writes_nothing(tmp_path):
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "searchgrade.cli", "evaluate", str(CRANFIELD), "--qrels", "--ray", f"127.0.0.1:{port}",
         "--data-dir", str(tmp_path / "d")], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"searchgrade: error: cannot reach the Ray cluster at 127.0.0.1:{port}")
    assert "--ray alone" in lines[0] and "6379" in lines[0]
    assert time.monotonic() - started < 60  # Python, torch and the collection load; the check is instant
    assert not (tmp_path / "d").exists()


def test_a_port_that_is_not_ray_is_refused_in_seconds():
    class Hello(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        started = time.monotonic()
        with pytest.raises(SearchGradeError, match=f"{address} answers, but not as a Ray cluster"):
            check_reachable(address, timeout_s=3)
        assert time.monotonic() - started < 10
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(SearchGradeError, match="unknown host 'no-such-host.invalid'"):
        check_reachable("no-such-host.invalid:6379")
    with pytest.raises(SearchGradeError, match="is not an address"):
        check_reachable("10.0.0.5:notaport")


def test_without_ray_installed_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SearchGradeError, match=re.escape("pip install 'searchgrade[ray]'")):
        import_ray()


def test_a_run_joins_a_cluster_started_with_ray_start(tmp_path):
    """A cluster of its own (``ray start --head``, token authentication as Ray 2.60 starts it),
    joined by address from the command line, as a user would."""
    import json
    import os
    import signal

    from tests.conftest import write_beir

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import shutil
    import tempfile

    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
    short = tempfile.mkdtemp(prefix="sg-ray-")  # Ray's socket paths must stay under 108 bytes
    ray_cli = Path(sys.executable).with_name("ray")
    head = subprocess.Popen([str(ray_cli), "start", "--head", "--block", f"--port={port}", "--num-cpus=1",
                             "--include-dashboard=false", "--object-store-memory=100000000",
                             f"--temp-dir={short}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                check_reachable(f"127.0.0.1:{port}", timeout_s=2)
                break
            except SearchGradeError:
                if time.monotonic() > deadline or head.poll() is not None:
                    raise
                time.sleep(1)
        collection = write_beir(tmp_path / "tiny")
        run = subprocess.run(
            [sys.executable, "-m", "searchgrade.cli", "evaluate", str(collection), "--qrels", "--strategies",
             "fulltext", "--ray", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d")],
            env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
        assert run.returncode == 0, run.stderr
        shown = subprocess.run([sys.executable, "-m", "searchgrade.cli", "show", run.stdout.split()[-1],
                                "--format", "json", "--data-dir", str(tmp_path / "d")],
                               capture_output=True, text=True, timeout=120, cwd=REPO)
        stats = json.loads(shown.stdout)["run"]["stats"]["ray"]
        assert stats["address"] == f"127.0.0.1:{port}" and stats["cpus"] == 1
        assert stats["search"] == {"actors": 1, "chunks": 2}
    finally:
        if head.poll() is None:
            os.killpg(head.pid, signal.SIGTERM)  # --block: the head stops what it started
            head.wait(timeout=60)
        shutil.rmtree(short, ignore_errors=True)


def test_a_worker_that_does_not_see_the_collection_stops_the_run_with_one_line(local_ray, tmp_path):
    from searchgrade.engine.ray.search_workers import BuildSpec, RaySearch
    from searchgrade.indexes.base import QueryBatch

    spec = BuildSpec(collection_path=str(tmp_path / "not-here"), collection_fields={}, fingerprint="x",
                     settings=IndexSettings(), data_dir=str(tmp_path), strategies=("fulltext",), declared={},
                     artifacts={"bm25": str(tmp_path / "indexes" / "bm25")})
    search = RaySearch(connect(None), spec, k=10)
    try:
        with pytest.raises(SearchGradeError) as raised:
            search.execute(["fulltext"], QueryBatch(["q1"], ["wings"]), None, None)
    finally:
        search.close()
    message = str(raised.value)
    assert message.startswith("the Ray worker on ") and "does not see the bm25 index" in message
    assert "same paths" in message and "\n" not in message


def test_a_stopped_run_resumed_on_ray_completes_with_the_local_figures(local_ray, tmp_path, tiny_beir, monkeypatch):
    from searchgrade.engine.run.pipeline import resume_run
    from searchgrade.indexes.builtin import fulltext

    collection = load_collection(tiny_beir)
    config = RunConfig(strategies=("fulltext",), n_bootstrap=200)
    local = Store(tmp_path / "local")
    local_id = run_evaluation(collection, config, local, tmp_path / "local").run_id

    def interrupted(self, query, k):
        raise KeyboardInterrupt

    search = fulltext.FulltextSearcher.search_one
    monkeypatch.setattr(fulltext.FulltextSearcher, "search_one", interrupted)
    store = Store(tmp_path / "d")
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(collection, config, store, tmp_path / "d")
    (run,) = store.list_runs()
    assert run.status == "cancelled"
    monkeypatch.setattr(fulltext.FulltextSearcher, "search_one", search)
    with ray_session(None) as session:
        outcome = resume_run(run.run_id, store, tmp_path / "d", collection=collection, runner=RayRunner(session))
    assert outcome.status == "complete"
    assert store.get_run(run.run_id).stats["ray"]["search"]["chunks"] == 2  # the 5 queries: 1, then 4
    values = {(r["metric"], r["k"], r["query_id"]): r["value"] for r in store.metric_values(run.run_id)}
    assert values == {(r["metric"], r["k"], r["query_id"]): r["value"] for r in local.metric_values(local_id)}


def test_search_actors_the_cluster_cannot_place_stop_the_run_with_one_line(local_ray, tmp_path):
    from searchgrade.engine.ray.search_workers import BuildSpec, RaySearch
    from searchgrade.indexes.base import QueryBatch

    @local_ray.remote(num_cpus=2)
    class Hog:  # another job holding every CPU of the cluster
        def ping(self):
            return True

    hog = Hog.remote()
    local_ray.get(hog.ping.remote(), timeout=120)
    spec = BuildSpec(collection_path=str(tmp_path), collection_fields={}, fingerprint="x",
                     settings=IndexSettings(), data_dir=str(tmp_path), strategies=("fulltext",), declared={},
                     artifacts={})
    search = RaySearch(connect(None), spec, k=10, place_timeout_s=3)
    try:
        started = time.monotonic()
        with pytest.raises(SearchGradeError) as raised:
            search.execute(["fulltext"], QueryBatch(["q1"], ["wings"]), None, None)
        waited = time.monotonic() - started
    finally:
        search.close()
        local_ray.kill(hog)
    message = str(raised.value)
    assert message.startswith("1 search actor could not be placed on the Ray cluster in 3 s") and "\n" not in message
    assert "0 of 2 CPUs are free" in message and "free CPUs" in message
    assert waited < 30


def test_a_worker_that_cannot_run_a_strategy_the_driver_runs_says_why(local_ray, tmp_path, tiny_beir):
    from searchgrade.engine.ray.search_workers import BuildSpec, RaySearch
    from searchgrade.indexes.base import QueryBatch
    from searchgrade.indexes.build import build_searchers

    collection = load_collection(tiny_beir)
    built = build_searchers(collection, IndexSettings(), tmp_path, strategies=("fulltext",))
    # The worker's reranker is one it cannot load (say, a trained reranker missing on its node).
    spec = BuildSpec(collection_path=str(tiny_beir), collection_fields=dict(collection.fields),
                     fingerprint=built.stats["collection_fingerprint"],
                     settings=IndexSettings(reranker_model="trained:not-on-this-node"), data_dir=str(tmp_path),
                     strategies=("fulltext", "fulltext_rerank"), declared={}, artifacts=dict(built.artifacts))
    search = RaySearch(connect(None), spec, k=10)
    try:
        with pytest.raises(SearchGradeError) as raised:
            search.execute(["fulltext", "fulltext_rerank"], QueryBatch(["q1"], ["wings"]), None, None)
    finally:
        search.close()
    message = str(raised.value)
    assert message.startswith(f"the Ray worker on {socket.gethostname()} cannot run fulltext_rerank, which the "
                              "driver runs: ") and "not-on-this-node" in message and "\n" not in message


def test_device_cuda_is_refused_on_ray_before_a_run_is_made(tmp_path, tiny_beir):
    from searchgrade.engine.ray.session import RaySession

    store = Store(tmp_path / "d")
    config = RunConfig(strategies=("fulltext",), index=IndexSettings(device="cuda"))
    with pytest.raises(SearchGradeError, match=r"^--device cuda does not run on Ray: .* use --device cpu"):
        run_evaluation(load_collection(tiny_beir), config, store, tmp_path / "d",
                       runner=RayRunner(RaySession(None, started=False)))
    assert store.list_runs() == []


def test_resume_with_a_wrong_address_fails_with_one_line_and_writes_nothing(tmp_path):
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "-m", "searchgrade.cli", "resume", "abc123", "--ray", f"127.0.0.1:{port}",
         "--data-dir", str(tmp_path / "d")], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"searchgrade: error: cannot reach the Ray cluster at 127.0.0.1:{port}")
    assert not (tmp_path / "d").exists()
