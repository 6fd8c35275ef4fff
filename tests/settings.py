"""The suite's settings: the product's own, with a key of its own.

The suite runs with DEBUG off, where the product refuses to start without SECRET_KEY.
Set in the environment before the settings load, so the processes the suite starts
(daphne, Celery workers, manage.py) inherit it.
"""

import os

# The suite searches by keywords unless a test turns embeddings on (tests/llm_platform, tests/context):
# the local model's tests are few and its own; the rest keep their figures and their speed.
os.environ.setdefault("GROUNDWORK_EMBEDDINGS", "off")
os.environ.setdefault("SECRET_KEY", "groundwork-test-suite-key-not-for-any-deployment-0123456789")
# The suite's servers speak plain HTTP on loopback: the documented opt-out of DEBUG-off's HTTPS.
os.environ.setdefault("HTTPS", "0")

from config.settings import *  # noqa: E402,F401,F403

# A password hash costs a third of a second by design (PBKDF2), and the suite makes about a thousand
# users: it hashes them with MD5. A test whose users log in to a server the suite started in a process
# of its own (daphne, on the product's settings) hashes them the product's way (tests/conftest.py).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
