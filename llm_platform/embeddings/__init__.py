"""Text embeddings computed in-process. `local`: all-MiniLM-L6-v2 on the CPU with onnxruntime (minilm.py).

No Django here: a worker, a bench or a test uses it as plain Python.
"""

from .minilm import MiniLM, load_minilm, windows
from .weights import EmbeddingModelUnavailable

__all__ = ["EmbeddingModelUnavailable", "MiniLM", "load_minilm", "windows"]
