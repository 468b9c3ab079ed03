"""Embedding backends: what computes a sentence-transformers model's vectors, and on which device.

- ``torch``: sentence-transformers' own ``encode`` (fp32; on a CUDA GPU when ``device`` is one).
- ``onnx``: the same model exported here with ``torch.onnx.export`` and run by ONNX Runtime with
  its transformer graph fusions (fp32, CPU). The ``torch`` vectors to 1e-4 (tested).
- ``onnx-int8``: that graph with its weight matrices quantized to int8 by ONNX Runtime's dynamic
  quantization (per output channel, 7-bit reduced range: AVX2's int8 dot products otherwise saturate
  their 16-bit sums, which costs far more accuracy), activations quantized per batch; CPU only.
  Not the same vectors: mean cosine ~0.993 to fp32 on SciFact (README: its measured speed and nDCG).

The exported (and quantized) model is made from the weights loaded here, never downloaded, and kept
in ``<data dir>/onnx/<model slug>/<backend>-v<EXPORT_VERSION>-<weights digest>/``, written whole or
not at all. Vectors of different backends, or of one ONNX backend's different export recipes
(``EXPORT_VERSION``), never share an embedding cache (``cache_tag``) or an ANN index
(``backend_identity``, in IndexSettings.fingerprint).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.owner import left_by_dead_process, owner_tag
from searchgrade.core.records import SearchGradeError

#: Backend name -> what it is (``--embedding-backend``); the registry of backends.
BACKENDS: dict[str, str] = {
    "torch": "sentence-transformers encode, fp32 (CPU or CUDA)",
    "onnx": "ONNX Runtime, fused fp32 graph (CPU)",
    "onnx-int8": "ONNX Runtime, dynamic int8 weights, per-channel, reduced range (CPU)",
}

#: Bump when the export or quantization recipe changes. It names the export folder (onnx_dir) and
#: is part of the ONNX backends' identity (backend_identity): their embedding cache folder and ANN
#: fingerprints change with it, so no vector of the old recipe meets a query vector of the new one.
EXPORT_VERSION = "2"

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
_FALLBACK = "use --embedding-backend torch"


def check_backend(backend: str) -> None:
    """Raises SearchGradeError (one line, the valid names) for an unknown backend."""
    if backend not in BACKENDS:
        raise SearchGradeError(
            f"embedding backend {backend!r} is not known (--embedding-backend): use one of "
            f"{', '.join(BACKENDS)}"
        )


def check_device(device: str) -> None:
    """Raises SearchGradeError for a device that is not auto, cpu, cuda or cuda:N."""
    if not isinstance(device, str) or not _DEVICE.match(device):
        raise SearchGradeError(
            f"device {device!r} is not known (--device): use auto, cpu, cuda or cuda:N"
        )


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(backend: str, device: str = "auto") -> str:
    """The device ``backend`` runs on: ``auto`` is a CUDA GPU when torch sees one (``torch``
    backend), else the CPU.

    Raises:
        SearchGradeError: an unknown backend or device; a CUDA device that torch does not see; a
            CUDA device for an ONNX backend (they run on the CPU here).
    """
    check_backend(backend)
    check_device(device)
    if backend != "torch":
        if device.startswith("cuda"):
            raise SearchGradeError(
                f"embedding backend {backend!r} runs on the CPU only: use --device cpu (or auto), or "
                "--embedding-backend torch for a GPU"
            )
        return "cpu"
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SearchGradeError(
                f"--device {device}: torch sees no CUDA GPU here (a CPU build of torch, or no "
                "driver): use --device cpu or auto"
            )
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise SearchGradeError(
                f"--device {device}: torch sees {torch.cuda.device_count()} CUDA GPU(s), numbered "
                "from 0: use one of those, or --device auto"
            )
    return device


def backend_identity(backend: str) -> str:
    """What made a backend's vectors, as artifact names and fingerprints hold it: ``torch`` alone
    (its vectors owe nothing to our export), an ONNX backend with its recipe (``onnx-int8.v2``)."""
    check_backend(backend)
    return backend if backend == "torch" else f"{backend}.v{EXPORT_VERSION}"


def cache_tag(backend: str) -> str:
    """Suffix of a backend's embedding cache folder: none for ``torch`` (caches and shipped vectors
    made before backends existed stay valid), ``@`` + its identity for the others."""
    identity = backend_identity(backend)
    return "" if identity == "torch" else f"@{identity}"


# -- ONNX -----------------------------------------------------------------------------------------


def _import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise SearchGradeError(
            "onnxruntime is not installed (pip install onnxruntime onnx), needed by the onnx "
            f"embedding backends: install it or {_FALLBACK}"
        ) from exc
    return onnxruntime


def _pooling(st_model: Any, name: str) -> tuple[Any, str, int]:
    """(the transformer module, "mean" or "cls", max tokens) of a sentence-transformers model
    made of a Transformer, a Pooling and optionally a Normalize module (the common layout)."""
    modules = list(st_model)
    kinds = [type(module).__name__ for module in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise SearchGradeError(
            f"embedding model {name!r} is made of {' + '.join(kinds)}; the onnx backends handle "
            f"Transformer + Pooling (+ Normalize) only: {_FALLBACK}"
        )
    pooling = modules[1]
    mode = getattr(pooling, "pooling_mode", None)
    if not isinstance(mode, str):  # sentence-transformers before 6
        mode = pooling.get_pooling_mode_str()
    if mode not in ("mean", "cls"):
        raise SearchGradeError(
            f"embedding model {name!r} pools its tokens by {mode!r}; the onnx backends handle mean "
            f"and cls pooling only: {_FALLBACK}"
        )
    return modules[0], mode, int(st_model.max_seq_length or modules[0].max_seq_length)


def weights_digest(module: Any) -> str:
    """A digest of the weights actually loaded (names, shapes, bytes): the identity of an export."""
    digest = hashlib.sha256()
    for key, tensor in sorted(module.state_dict().items()):
        array = tensor.detach().cpu().contiguous().numpy()
        digest.update(f"{key}:{array.dtype}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def onnx_dir(models_dir: Path, slug: str, backend: str, digest: str) -> Path:
    """Where ``backend``'s model file for these weights lives (see the module docstring)."""
    return Path(models_dir) / "onnx" / slug / f"{backend}-v{EXPORT_VERSION}-{digest}"


def _keyword_forward(model: Any) -> Any:
    """The transformer as a module taking positional inputs, which ``torch.onnx.export`` passes
    (transformers 5 models take keyword inputs only)."""
    import torch

    class KeywordForward(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    return KeywordForward(model)


#: Steps of an export whose failure is the data directory's (read-only, full), not the model's.
_FOLDER_STEP = "making its folder"
_PUBLISH_STEP = "saving it"


def _fail(backend: str, step: str, exc: BaseException) -> SearchGradeError:
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    fix = _FALLBACK
    if step in (_FOLDER_STEP, _PUBLISH_STEP):
        fix = f"give a writable data directory with free space (--data-dir), or {_FALLBACK}"
    return SearchGradeError(
        f"could not make the {backend} embedding model ({step} failed: {type(exc).__name__}: "
        f"{first}): {fix}"
    )


#: One export at a time in a process: torch's tracing is not made for two threads at once, and
#: two sessions of the app asking for the same model export it once.
_EXPORT_LOCK = threading.Lock()

#: A temporary export folder: ``.<target>.<PID@HOST>.<random>.tmp``; earlier versions wrote
#: ``.<target>.<random>.tmp`` (no owner: removed once a day old, no export takes that long).
_TMP = re.compile(r"\.(.+?)\.(?:(\d+)@([A-Za-z0-9._-]+)\.)?[0-9a-f]{8}\.tmp")
_OLD_FORMAT_AGE_S = 24 * 3600


def _tmp_dir(target: Path) -> Path:
    return target.with_name(f".{target.name}.{owner_tag()}.{uuid.uuid4().hex[:8]}.tmp")


def sweep_stale_exports(folder: Path) -> list[str]:
    """Remove the temporary folders of exports whose process (on this host) is gone, as a killed
    export leaves them (about twice the model's size); returns their names."""
    swept = []
    for path in sorted(folder.glob(".*.tmp")) if folder.is_dir() else []:
        match = _TMP.fullmatch(path.name)
        if match is None or not path.is_dir():
            continue
        if match.group(2) is None:
            stale = time.time() - path.stat().st_mtime > _OLD_FORMAT_AGE_S
        else:
            stale = left_by_dead_process(int(match.group(2)), match.group(3))
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            swept.append(path.name)
    return swept


def _publish(tmp: Path, target: Path, manifest: dict[str, Any]) -> None:
    """Move a finished folder into place (the manifest written last marks it whole)."""
    (tmp / "export.json").write_text(json.dumps(manifest, indent=1))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, target)
    except OSError:  # another process made it meanwhile: use theirs
        if not (target / "export.json").is_file():
            raise


def _ready(target: Path) -> bool:
    return (target / "export.json").is_file() and (target / "model.onnx").is_file()


def _made_once(target: Path, make: Callable[[], Path]) -> Path:
    """``target/model.onnx``: reused when it is there, else made by ``make`` under the export lock
    (another session of this process may have made it while this one waited)."""
    if _ready(target):
        return target / "model.onnx"
    with _EXPORT_LOCK:
        return target / "model.onnx" if _ready(target) else make()


def export_onnx(transformer: Any, target: Path) -> Path:
    """Export the transformer to ``target/model.onnx`` as an fp32 graph with ONNX Runtime's
    transformer fusions (attention, layer norm, GELU), atomically; reused when it is there.

    The export traces a copy of the model: the loaded one, which the ``torch`` backend shares,
    is never switched to eager attention or out of eval mode under a run using it.

    Raises:
        SearchGradeError: one line naming the step that failed and the fix.
    """
    ort = _import_onnxruntime()
    return _made_once(target, lambda: _export(transformer, target, ort))


def _export(transformer: Any, target: Path, ort: Any) -> Path:
    import warnings

    tmp = _tmp_dir(target)
    step = _FOLDER_STEP
    try:
        sweep_stale_exports(target.parent)
        tmp.mkdir(parents=True)
        step = "export"
        import torch
        from transformers.utils import logging as hf_logging

        sample = transformer.tokenizer(["searchgrade exports this model", "two"], padding=True,
                                       return_tensors="pt")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        if "token_type_ids" not in sample:
            sample["token_type_ids"] = torch.zeros_like(sample["input_ids"])
        raw = tmp / "raw.onnx"
        auto_model = copy.deepcopy(transformer.auto_model).eval()
        # Eager attention exports as the MatMul/Softmax pattern ONNX Runtime fuses into one
        # Attention op; SDPA's export (masking with IsNaN/Where) is left unfused, ~20% slower.
        if getattr(auto_model.config, "_attn_implementation", None) is not None:
            auto_model.config._attn_implementation = "eager"
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _keyword_forward(auto_model), tuple(sample[n] for n in names), str(raw),
                    input_names=names, output_names=["last_hidden_state"],
                    dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                    opset_version=17, dynamo=False,
                )
        finally:
            hf_logging.set_verbosity(verbosity)
        step = "graph optimisation"
        config = auto_model.config
        del auto_model  # the copy's memory back before the optimiser loads the graph
        if getattr(config, "model_type", "") == "bert":
            from onnxruntime.transformers.optimizer import optimize_model

            optimized = optimize_model(str(raw), model_type="bert", num_heads=config.num_attention_heads,
                                       hidden_size=config.hidden_size, opt_level=1)
            optimized.save_model_to_file(str(tmp / "model.onnx"))
            raw.unlink()
        else:  # ONNX Runtime's generic fusions still apply when a session loads it
            raw.rename(tmp / "model.onnx")
        step = _PUBLISH_STEP
        _publish(tmp, target, {"backend": "onnx", "export_version": EXPORT_VERSION,
                               "torch": torch.__version__, "onnxruntime": ort.__version__,
                               "model_type": getattr(config, "model_type", None)})
    except SearchGradeError:
        raise
    except Exception as exc:
        raise _fail("onnx", step, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target / "model.onnx"


def quantize_int8(fp32_model: Path, target: Path) -> Path:
    """The fp32 graph with its weight matrices in int8 (dynamic quantization: per output channel,
    reduced range; activations quantized per batch), at ``target/model.onnx``, atomically.

    Raises:
        SearchGradeError: one line naming the step that failed and the fix.
    """
    ort = _import_onnxruntime()
    return _made_once(target, lambda: _quantize(fp32_model, target, ort))


def _quantize(fp32_model: Path, target: Path, ort: Any) -> Path:
    tmp = _tmp_dir(target)
    step = _FOLDER_STEP
    try:
        sweep_stale_exports(target.parent)
        tmp.mkdir(parents=True)
        step = "int8 quantization"
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # DefaultTensorType: the fused graph's com.microsoft ops carry no type the quantizer
        # can infer, and 1 (float) is what they hold.
        # The weight matrices (MatMul, and the fused Attention's QKV projection) only: the word
        # embedding table stays fp32 (quantizing it costs accuracy and saves no time).
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # its advice to pre-process the graph goes to the root logger
        try:
            quantize_dynamic(str(fp32_model), str(tmp / "model.onnx"), weight_type=QuantType.QInt8,
                             per_channel=True, reduce_range=True,
                             op_types_to_quantize=["MatMul", "Attention"],
                             extra_options={"DefaultTensorType": 1})
        finally:
            root.setLevel(level)
        step = _PUBLISH_STEP
        _publish(tmp, target, {"backend": "onnx-int8", "export_version": EXPORT_VERSION,
                               "onnxruntime": ort.__version__, "weights": "int8 per-channel, reduce_range, MatMul + Attention",
                               "from": str(fp32_model)})
    except SearchGradeError:
        raise
    except Exception as exc:
        raise _fail("onnx-int8", step, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target / "model.onnx"


class OnnxEmbedder:
    """A sentence-transformers model run by ONNX Runtime, with ``encode`` as SentenceTransformer's.

    Tokenizes with the model's own ``preprocess`` (the same token ids as ``encode``), pools as the
    model does (mean over the attention mask, or the first token), and normalises when asked.
    """

    def __init__(self, session: Any, transformer: Any, max_length: int, pooling: str, backend: str,
                 path: Path) -> None:
        self.session = session
        self.transformer = transformer
        self.max_seq_length = max_length
        self.pooling = pooling
        self.backend = backend
        self.device = "cpu"
        self.path = path
        self._inputs = {i.name for i in session.get_inputs()}

    def _preprocess(self, texts: list[str]) -> dict[str, Any]:
        preprocess = getattr(self.transformer, "preprocess", None) or self.transformer.tokenize
        return preprocess(texts)

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.backend}, {self.path})"

    def encode(self, sentences: Sequence[str], batch_size: int = 32, normalize_embeddings: bool = False,
               convert_to_numpy: bool = True, show_progress_bar: bool = False, **_: Any) -> np.ndarray:  # noqa: ARG002 - SentenceTransformer.encode's signature
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        out: np.ndarray | None = None
        # Longest first, as sentence-transformers does: batches of like lengths pad least.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        for start in range(0, len(texts), max(1, batch_size)):
            rows = order[start:start + batch_size]
            enc = {key: value.numpy() for key, value in self._preprocess([texts[i] for i in rows]).items()
                   if hasattr(value, "numpy")}
            feed = {name: enc[name].astype(np.int64) for name in self._inputs if name in enc}
            if "token_type_ids" in self._inputs and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            hidden = self.session.run(None, feed)[0]
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = enc["attention_mask"][..., None].astype(np.float32)
                pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        if out is None:
            return np.zeros((0, 0), dtype=np.float32)
        if normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.clip(norms, 1e-12, None)
        return out


def load_onnx_embedder(st_model: Any, name: str, slug: str, backend: str, models_dir: Path) -> OnnxEmbedder:
    """The ONNX Runtime embedder of a loaded SentenceTransformer, exporting it on first use.

    Raises:
        SearchGradeError: onnxruntime missing, a model layout the backend cannot run, an export or
            a session that fails (one line each, with ``--embedding-backend torch`` as the fix).
    """
    ort = _import_onnxruntime()
    transformer, pooling, max_length = _pooling(st_model, name)
    digest = weights_digest(transformer.auto_model)
    model_file = export_onnx(transformer, onnx_dir(models_dir, slug, "onnx", digest))
    if backend == "onnx-int8":
        model_file = quantize_int8(model_file, onnx_dir(models_dir, slug, backend, digest))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise SearchGradeError(
            f"ONNX Runtime cannot load {model_file} ({type(exc).__name__}): delete that folder to "
            f"export it again, or {_FALLBACK}"
        ) from exc
    return OnnxEmbedder(session, transformer, max_length, pooling, backend, model_file)
