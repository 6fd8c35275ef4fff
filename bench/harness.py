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
