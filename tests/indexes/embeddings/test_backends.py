"""Embedding backends: the ONNX exports of the packaged model against its torch vectors, the cache
and artifacts keyed by backend, the backend recorded with a run, and bad backends or devices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from searchgrade.indexes.embeddings import backends as embed_backends
from searchgrade.indexes.embeddings.backends import resolve_device
from searchgrade.indexes.embeddings.encoder import (
    cache_dir_for,
    embedder_backend,
    encode,
    encode_cached,
    load_embedder,
    model_slug,
)
from searchgrade.indexes.settings import IndexSettings
from tests.conftest import write_beir
from tests.indexes.conftest import DOCS, QUERIES

pytest.importorskip("onnxruntime")

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = [f"{title} {text}" for title, text in DOCS.values()] + [
    # long enough to be truncated at the model's 256 tokens, and one of a single character
    "Aspirin lowers the risk of a first heart attack in adults with diabetes. " * 40,
    "x",
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory for the module: the ONNX export is made once and reused."""
    return tmp_path_factory.mktemp("backends")


@pytest.fixture(scope="module")
def vectors(data_dir: Path) -> dict[str, np.ndarray]:
    return {backend: encode(load_embedder(MODEL, backend, "cpu", data_dir), TEXTS, 8)
            for backend in ("torch", "onnx", "onnx-int8")}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def test_onnx_fp32_gives_the_torch_vectors(vectors):
    assert vectors["onnx"].shape == vectors["torch"].shape == (len(TEXTS), 384)
    assert np.abs(vectors["onnx"] - vectors["torch"]).max() < 1e-4
    assert _cosines(vectors["onnx"], vectors["torch"]).min() > 0.99999


def test_onnx_int8_is_quantized_yet_close_to_fp32(vectors):
    cosines = _cosines(vectors["onnx-int8"], vectors["torch"])
    assert np.allclose(np.linalg.norm(vectors["onnx-int8"], axis=1), 1, atol=1e-5)
    assert cosines.mean() > 0.99 and cosines.min() > 0.97, cosines  # "x" alone: 0.979
    # really int8: were it the fp32 graph, every vector would agree to 1e-4
    assert np.abs(vectors["onnx-int8"] - vectors["torch"]).max() > 1e-3


def test_onnx_int8_finds_the_same_top_document_for_each_query(data_dir, vectors):
    queries = [text for text, _ in QUERIES.values()]
    for backend in ("torch", "onnx-int8"):
        q = encode(load_embedder(MODEL, backend, "cpu", data_dir), queries, 8)
        top = (q @ vectors[backend][:len(DOCS)].T).argmax(axis=1)
        assert [list(DOCS)[i] for i in top] == [doc for _, doc in QUERIES.values()], backend


def test_embedders_say_their_backend_and_the_export_lives_in_the_data_dir(data_dir):
    for backend in ("torch", "onnx", "onnx-int8"):
        assert embedder_backend(load_embedder(MODEL, backend, "cpu", data_dir)) == backend
    exports = sorted(p.parent.name.split("-v")[0] for p in (data_dir / "onnx").rglob("export.json"))
    assert exports == ["onnx", "onnx-int8"]
    manifest = json.loads(next((data_dir / "onnx").rglob("onnx-int8-*/export.json")).read_text())
    assert manifest["backend"] == "onnx-int8"


def test_a_finished_export_is_reused(data_dir):
    folder = next((data_dir / "onnx").rglob("onnx-v*/model.onnx")).parent
    before = (folder / "model.onnx").stat().st_mtime_ns
    assert embed_backends.export_onnx(None, folder) == folder / "model.onnx"  # nothing to export
    assert (folder / "model.onnx").stat().st_mtime_ns == before


def test_a_failed_export_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import torch

    def broken(*args, **kwargs):
        raise RuntimeError("unsupported operator aten::magic\nsecond line of the trace")

    monkeypatch.setattr(torch.onnx, "export", broken)
    transformer = load_embedder(MODEL)[0]
    target = tmp_path / "onnx" / "m" / "onnx-v9-x"
    with pytest.raises(SearchGradeError) as info:
        embed_backends.export_onnx(transformer, target)
    message = str(info.value)
    assert "\n" not in message
    assert "export failed" in message and "aten::magic" in message
    assert "--embedding-backend torch" in message
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_a_data_dir_that_cannot_hold_the_export_is_one_line(tmp_path):
    (tmp_path / "data").write_text("a file where the data directory should be")
    target = tmp_path / "data" / "onnx" / "m" / "onnx-v9-x"
    with pytest.raises(SearchGradeError) as info:
        embed_backends.export_onnx(None, target)  # fails before the model is needed
    message = str(info.value)
    assert "\n" not in message and "making its folder failed" in message
    assert "--data-dir" in message and "--embedding-backend torch" in message


def _fake_quantizer(monkeypatch) -> None:
    """quantize_dynamic writing a stand-in file: what is tested here is the folder handling."""
    import onnxruntime.quantization

    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic",
                        lambda source, out, **kwargs: Path(out).write_bytes(b"int8 graph"))


def test_a_failure_to_save_the_export_is_named_as_such_and_leaves_nothing(tmp_path, monkeypatch):
    _fake_quantizer(monkeypatch)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(embed_backends, "_publish", disk_full)
    target = tmp_path / "onnx" / "m" / "onnx-int8-v9-x"
    with pytest.raises(SearchGradeError) as info:
        embed_backends.quantize_int8(tmp_path / "fp32.onnx", target)
    message = str(info.value)
    assert "saving it failed" in message and "No space left" in message
    assert "quantization failed" not in message and "\n" not in message
    assert list(target.parent.iterdir()) == []


def test_an_export_sweeps_what_killed_exports_of_this_host_left(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys
    import time

    from searchgrade.core.owner import this_host

    _fake_quantizer(monkeypatch)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead, here = proc.pid, this_host()
    folder = tmp_path / "onnx" / "m"
    names = {
        f".onnx-v2-x.{dead}@{here}.0123abcd.tmp": "swept",  # a killed export of this host
        ".onnx-v2-x.89abcdef.tmp": "swept",  # an earlier version's, two days old
        f".onnx-v2-x.{os.getpid()}@{here}.0123abcd.tmp": "kept",  # a live export
        f".onnx-v2-x.{dead}@other-host.0123abcd.tmp": "kept",  # another host's (shared data dir)
        ".onnx-v2-x.fedcba98.tmp": "kept",  # an earlier version's, maybe still running
    }
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "raw.onnx").write_bytes(b"half an export")
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(folder / ".onnx-v2-x.89abcdef.tmp", (two_days_ago, two_days_ago))
    model = embed_backends.quantize_int8(tmp_path / "fp32.onnx", folder / "onnx-int8-v9-x")
    assert model.read_bytes() == b"int8 graph"
    left = {p.name for p in folder.iterdir()}
    assert left == {name for name, fate in names.items() if fate == "kept"} | {"onnx-int8-v9-x"}


def test_concurrent_exports_take_turns_and_leave_the_shared_torch_model_as_it_was(tmp_path, monkeypatch):
    """Two app sessions exporting at once: the tracing never overlaps, and the model the torch
    backend shares keeps its attention implementation and mode."""
    import threading
    import time

    import torch

    transformer = load_embedder(MODEL)[0]
    config = transformer.auto_model.config
    attention, training = getattr(config, "_attn_implementation", None), transformer.auto_model.training
    inside, most, seen = [0], [0], []
    lock = threading.Lock()

    def slow_broken_export(module, *args, **kwargs):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        seen.append((getattr(module.inner.config, "_attn_implementation", None),
                     getattr(config, "_attn_implementation", None)))
        time.sleep(0.3)
        with lock:
            inside[0] -= 1
        raise RuntimeError("stopped here by the test")

    monkeypatch.setattr(torch.onnx, "export", slow_broken_export)
    errors = []

    def export(i):
        try:
            embed_backends.export_onnx(transformer, tmp_path / "onnx" / "m" / "onnx-v9-x")
        except SearchGradeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=export, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 2 and most[0] == 1
    if attention is not None:  # the traced copy runs eager attention; the shared model never does
        assert seen == [("eager", attention), ("eager", attention)]
    assert getattr(config, "_attn_implementation", None) == attention
    assert transformer.auto_model.training == training


def test_each_backend_has_its_own_cache_and_torch_keeps_the_old_folder(tmp_path):
    dirs = {b: cache_dir_for(tmp_path, MODEL, b) for b in ("torch", "onnx", "onnx-int8")}
    assert dirs["torch"] == tmp_path / "embeddings" / model_slug(MODEL)
    assert len(set(dirs.values())) == 3
    assert cache_dir_for(tmp_path, MODEL) == dirs["torch"]


def test_encode_cached_refuses_an_embedder_of_another_backend(tmp_path, data_dir):
    int8 = load_embedder(MODEL, "onnx-int8", "cpu", data_dir)
    with pytest.raises(ValueError, match="would mix"):
        encode_cached(MODEL, ["a text"], cache_dir_for(tmp_path, MODEL, "torch"), model=int8)


def test_backend_changes_the_ann_fingerprint_but_torch_keeps_the_old_one():
    import hashlib

    torch_settings = IndexSettings(ann_index="flat")
    old = json.dumps({"artifact": "ann", "ann_index": "flat", "embedding_model": MODEL}, sort_keys=True)
    assert torch_settings.fingerprint("ann") == hashlib.sha256(old.encode()).hexdigest()[:16]
    int8 = IndexSettings(ann_index="flat", embedding_backend="onnx-int8")
    assert int8.fingerprint("ann") != torch_settings.fingerprint("ann")
    assert int8.fingerprint("embeddings") != torch_settings.fingerprint("embeddings")
    assert IndexSettings(ann_index="flat", device="cpu").fingerprint("ann") == torch_settings.fingerprint("ann")


def test_a_new_export_recipe_gives_new_vectors_an_own_cache_and_ann_index(tmp_path, monkeypatch):
    """EXPORT_VERSION names the export folder, the cache folder and the ANN fingerprint alike, so
    document vectors of an old recipe are never searched with query vectors of a new one."""
    def identity() -> dict[str, tuple]:
        out = {}
        for backend in embed_backends.BACKENDS:
            settings = IndexSettings(ann_index="flat", embedding_backend=backend)
            out[backend] = (embed_backends.onnx_dir(tmp_path, "m", backend, "d"),
                            cache_dir_for(tmp_path, MODEL, backend),
                            settings.fingerprint("ann"), settings.fingerprint("embeddings"))
        return out

    before = identity()
    assert before["onnx-int8"][1].name == f"{model_slug(MODEL)}@onnx-int8.v{embed_backends.EXPORT_VERSION}"
    monkeypatch.setattr(embed_backends, "EXPORT_VERSION", "99")
    after = identity()
    for backend in ("onnx", "onnx-int8"):
        assert all(a != b for a, b in zip(before[backend], after[backend], strict=True)), backend
    # torch's vectors owe nothing to the export: its cache folder and fingerprints stay
    assert before["torch"][1:] == after["torch"][1:]
    assert after["torch"][1] == tmp_path / "embeddings" / model_slug(MODEL)


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"embedding_backend": "onnx-fp16"}, "torch, onnx, onnx-int8"),
    ({"device": "tpu"}, "auto, cpu, cuda or cuda:N"),
])
def test_unknown_backend_or_device_is_one_line(kwargs, fragment):
    with pytest.raises(SearchGradeError) as info:
        IndexSettings(**kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_auto_device_is_cuda_only_when_torch_sees_a_gpu(monkeypatch):
    monkeypatch.setattr(embed_backends, "cuda_available", lambda: True)
    assert resolve_device("torch", "auto") == "cuda"
    assert resolve_device("onnx-int8", "auto") == "cpu"
    monkeypatch.setattr(embed_backends, "cuda_available", lambda: False)
    assert resolve_device("torch", "auto") == "cpu"


def _cli_error(capsys, argv) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--embedding-backend", "onnx-fp16"], "onnx-fp16"),
    (["--device", "tpu"], "--device"),
    (["--device", "cuda", "--embedding-backend", "onnx-int8"], "CPU only"),
])
def test_bad_backend_or_device_on_the_command_line_is_one_line_and_runs_nothing(tmp_path, capsys,
                                                                              extra, fragment):
    folder = write_beir(tmp_path / "tiny")
    err = _cli_error(capsys, ["evaluate", str(folder), "--qrels", "--data-dir", str(tmp_path / "d"), *extra])
    assert fragment in err
    assert not (tmp_path / "d" / "searchgrade.duckdb").exists() or Store(tmp_path / "d").list_runs() == []


def test_cuda_asked_for_where_torch_sees_none_is_one_line(tmp_path, capsys):
    if embed_backends.cuda_available():
        pytest.skip("a CUDA GPU is present")
    folder = write_beir(tmp_path / "tiny")
    err = _cli_error(capsys, ["evaluate", str(folder), "--qrels", "--data-dir", str(tmp_path / "d"),
                              "--device", "cuda"])
    assert "no CUDA GPU" in err and "--device cpu" in err


def test_a_run_records_its_backend_and_backends_never_share_vectors(tmp_path_factory, data_dir, capsys):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    runs = {}
    for backend in ("onnx-int8", "torch"):
        code = main(["evaluate", str(folder), "--qrels", "--strategies", "ann", "--data-dir", str(data_dir),
                     "--embedding-backend", backend, "--device", "auto"])
        assert code == 0
        runs[backend] = capsys.readouterr().out.strip().splitlines()[-1]
    store = Store(data_dir)
    documents = None
    for backend, run_id in runs.items():
        run = store.get_run(run_id)
        assert run.config["index"]["embedding_backend"] == backend
        assert run.config["index"]["device"] == "auto"
        index = run.stats["index"]
        assert index["embedding_backend"] == backend and index["embedding_device"] == "cpu"
        documents = documents or index["documents"]
        # the second backend found nothing of the first one's in its cache
        assert index["embedded"] == documents and index["cache_hits"] == 0
    assert main(["show", runs["onnx-int8"], "--data-dir", str(data_dir)]) == 0
    assert "by ONNX Runtime (int8 weights) on cpu" in capsys.readouterr().out
    slug = model_slug(MODEL)
    assert list(cache_dir_for(data_dir, MODEL, "onnx-int8").glob("shard-*.npz"))
    assert list((data_dir / "embeddings" / slug).glob("shard-*.npz"))
