"""One set-up for the benchmarks that need Django: in-process, a throwaway SQLite
database, Celery eager, the offline provider, an in-memory channel layer.

    import harness
    harness.setup_django()   # before any import of the project's apps
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the project's packages, for every benchmark that imports this


def setup_django() -> None:
    os.environ["GROUNDWORK_VAR_DIR"] = tempfile.mkdtemp(prefix="groundwork-bench-")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ["GROUNDWORK_LLM"] = "offline"
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # DEBUG stays off (no query log in the timings), where the settings want a key of their own.
    os.environ.setdefault("SECRET_KEY", "groundwork-bench-key-for-a-throwaway-database-only")
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django

    django.setup()

    from django.conf import settings
    from django.core.management import call_command

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    call_command("migrate", verbosity=0)


def median_ms(action, repeat: int) -> float:
    """The median wall time of `repeat` calls of `action`, in milliseconds."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        timings.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(timings), 3)


def write_results(name: str, figures: dict, **details) -> None:
    """Print the figures as a table and write them (with `details`, not printed) to bench/results/<name>.json."""
    width = max(len(key) for key in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    out = ROOT / "bench" / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**figures, **details}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


# Vectors made by an earlier bench run, by (text hash, model) as the product caches them: only the
# first run of a bench over a corpus pays for embedding it.
VECTOR_STORE = ROOT / "var" / "bench" / "text_embeddings.npz"


def load_text_embeddings() -> int:
    """Put the stored vectors into the throwaway database; how many there were."""
    import numpy as np

    from llm_platform.models import TextEmbedding

    if not VECTOR_STORE.exists():
        return 0
    stored = np.load(VECTOR_STORE, allow_pickle=False)
    rows = [
        TextEmbedding(text_hash=h, model=m, vector=v.astype("<f4").tobytes())
        for h, m, v in zip(stored["hashes"], stored["models"], stored["vectors"], strict=True)
    ]
    TextEmbedding.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return len(rows)


def save_text_embeddings() -> None:
    """Keep every vector of the throwaway database for the next run."""
    import numpy as np

    from llm_platform.models import TextEmbedding

    rows = list(TextEmbedding.objects.values_list("text_hash", "model", "vector"))
    width = {len(bytes(v)) for _h, _m, v in rows}
    if len(width) != 1:
        return  # vectors of models of several widths: keep what was stored before
    VECTOR_STORE.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        VECTOR_STORE,
        hashes=np.array([h for h, _m, _v in rows]),
        models=np.array([m for _h, m, _v in rows]),
        vectors=np.stack([np.frombuffer(bytes(v), dtype="<f4") for _h, _m, v in rows]),
    )
