"""The suite's settings: the product's own, with a key of its own.

The suite runs with DEBUG off, where the product refuses to start without SECRET_KEY.
Set in the environment before the settings load, so the processes the suite starts
(daphne, Celery workers, manage.py) inherit it.
"""

import os

os.environ.setdefault("SECRET_KEY", "groundwork-test-suite-key-not-for-any-deployment-0123456789")

from config.settings import *  # noqa: E402,F401,F403
