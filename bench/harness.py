"""One set-up for the benchmarks that need Django: in-process, a throwaway SQLite
database, Celery eager, the offline provider, an in-memory channel layer.

    import harness
    harness.setup_django()   # before any import of the project's apps
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["GROUNDWORK_VAR_DIR"] = tempfile.mkdtemp(prefix="groundwork-bench-")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ["GROUNDWORK_LLM"] = "offline"
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django

    django.setup()

    from django.conf import settings
    from django.core.management import call_command

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    call_command("migrate", verbosity=0)
