"""Settings for Liza Board.

Everything comes from the environment (django-environ). With nothing set the product runs on its
embedded default: the private PostgreSQL cluster of this checkout (liza_site/embedded_db.py) plus
the in-memory channel layer, one ASGI process. `DATABASE_URL` points at another PostgreSQL,
`REDIS_URL` switches to the channels-redis layer.
"""

from datetime import timedelta
from pathlib import Path

import environ

from liza_site.embedded_db import database_url as embedded_database_url
from liza_site.secret_key import secret_key_from_file

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
env_file = BASE_DIR / ".env"
if env_file.exists():
    environ.Env.read_env(env_file)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Never a key that is public: without DJANGO_SECRET_KEY, one is generated into var/ (0600) on
# the first run and reused after (docs/security.md).
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="") or secret_key_from_file(
    Path(env.str("LIZA_SECRET_KEY_FILE", default=str(VAR_DIR / "secret_key")))
)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# Origins (scheme://host[:port]) whose pages may open a board websocket besides the server's
# own origin; scheme, host and port must all match (liza_site/websocket_origin.py).
WEBSOCKET_ALLOWED_ORIGINS = env.list(
    "LIZA_WEBSOCKET_ALLOWED_ORIGINS", default=list(CSRF_TRUSTED_ORIGINS)
)

# -- HTTPS and proxies (docs/security.md "Production environment") ---------------------------
# LIZA_HTTPS=true is the one switch for a site served over HTTPS: redirect, secure cookies and
# a year of HSTS. Each setting below can still be set on its own.
HTTPS = env.bool("LIZA_HTTPS", default=False)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=HTTPS)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=HTTPS)
CSRF_COOKIE_SECURE = env.bool("DJANGO_CSRF_COOKIE_SECURE", default=HTTPS)
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=HTTPS)
# Preloading is a promise to browsers' built-in lists that is slow to take back: opt in.
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
# Behind a TLS-terminating proxy: the header it sets, e.g. "HTTP_X_FORWARDED_PROTO" (the value
# "https" is implied). Only set it when the proxy strips that header from clients' requests.
_proxy_ssl_header = env.str("DJANGO_SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None
# How many proxies append to X-Forwarded-For in front of the server: 0 trusts only the socket's
# address, so a client cannot pick the IP that lockouts and rate limits count (security.py).
NUM_PROXIES = env.int("LIZA_NUM_PROXIES", default=0)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "csp",
    "boards",
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes requires: it turns a lockout flagged during the view into the 429.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username or address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "liza_site.urls"

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

WSGI_APPLICATION = "liza_site.wsgi.application"
ASGI_APPLICATION = "liza_site.asgi.application"

# One engine everywhere: PostgreSQL. Without DATABASE_URL, the embedded default's private
# cluster of this checkout (var/postgres/, started by `.ci/serve` and `.ci/test`; see
# liza_site/embedded_db.py).
DATABASES = {"default": env.db_url("DATABASE_URL", default=embedded_database_url(BASE_DIR))}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=0))
# A kept connection is checked before reuse, so one broken by a database restart is replaced
# instead of failing the request.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
# A connection of ours left idle inside a transaction (a hung worker) would hold its row locks
# and block claims; PostgreSQL ends it after this long. A runaway statement ends too. Seconds;
# 0 turns either off (e.g. for a long migration).
_idle = env.int("DB_IDLE_IN_TRANSACTION_TIMEOUT", default=60)
_statement = env.int("DB_STATEMENT_TIMEOUT", default=30)
# JIT compiles a statement whose estimated cost passes jit_above_cost: the board's card
# statement of a 5,000-task project does (its sprint filter is costed per row), and compiling
# took ~370 ms of a statement that runs in ~25 ms. Our statements are short; DB_JIT=1 allows it.
_jit = "on" if env.bool("DB_JIT", default=False) else "off"
_db_options["options"] = (
    f"-c idle_in_transaction_session_timeout={_idle * 1000} "
    f"-c statement_timeout={_statement * 1000} -c jit={_jit}"
)
# The hot paths' statements (the heartbeat, claim-next, review claim-next: boards.coordination.
# rows.prepared_cursor) are prepared on a connection once it has run them this many times:
# PostgreSQL then parses and plans each once per connection instead of at every call — ~60 % of
# the database's CPU of a heartbeat (bench/README.md). Only those statements: every other query
# stays on Django's client-side binding, for which this does nothing. DB_PREPARED_STATEMENTS=0
# for a pooler that cannot hold prepared statements (PgBouncer before 1.21 in transaction mode).
if env.bool("DB_PREPARED_STATEMENTS", default=True):
    _db_options.setdefault("prepare_threshold", 5)
# Opt-in connection pool per process (psycopg_pool): production workers reuse connections
# instead of opening one per request (bench/README.md: +55 % claims/s).
_pool_size = env.int("DB_POOL_MAX_SIZE", default=0)
if _pool_size:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django requires it with a pool
    _db_options["pool"] = {
        "min_size": min(2, _pool_size),
        "max_size": _pool_size,
        "timeout": env.int("DB_POOL_TIMEOUT", default=10),
    }

REDIS_URL = env.str("REDIS_URL", default="")
# The escalation webhook (boards.watch.services.webhooks): receivers on loopback, private or
# link-local addresses are refused unless this is set (a deployment whose receiver is on its
# own network); how long one delivery may take; the site's public address for the payload's link.
LIZA_WEBHOOK_ALLOW_PRIVATE = env.bool("LIZA_WEBHOOK_ALLOW_PRIVATE", default=False)
LIZA_WEBHOOK_TIMEOUT = env.float("LIZA_WEBHOOK_TIMEOUT", default=5.0)
LIZA_PUBLIC_URL = env.str("LIZA_PUBLIC_URL", default="")
# People's notifications by e-mail (boards.watch.services.notifications, sent by the watcher):
# EMAIL_URL in django-environ's form (smtp+tls://user:password@host:587); by default the
# console backend, which prints each message instead of sending it. EMAIL_BACKEND overrides the
# backend alone. EMAIL_TIMEOUT bounds an SMTP conversation, as LIZA_WEBHOOK_TIMEOUT a POST.
_email = env.email_url("EMAIL_URL", default="consolemail://")
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default=_email["EMAIL_BACKEND"])
EMAIL_HOST = _email.get("EMAIL_HOST") or "localhost"
EMAIL_PORT = _email.get("EMAIL_PORT") or 25
EMAIL_HOST_USER = _email.get("EMAIL_HOST_USER") or ""
EMAIL_HOST_PASSWORD = _email.get("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS"))
EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL"))
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT", default=10.0)
DEFAULT_FROM_EMAIL = env.str("LIZA_EMAIL_FROM", default="liza-board@localhost")
# The bearer token Prometheus scrapes /metrics with (staff sessions need none); unset: staff only.
LIZA_METRICS_TOKEN = env.str("LIZA_METRICS_TOKEN", default="")
# How often each ASGI worker checks that its channel layer answers while boards are open
# (boards.board.live.health): a board shows "live updates paused" within about this long.
LIZA_LIVE_PROBE_INTERVAL = env.float("LIZA_LIVE_PROBE_INTERVAL", default=5.0)
# Seconds between two access re-checks of an open board socket, a backstop for an
# `access.changed` message lost while Redis was down (docs/security.md "Live boards").
LIZA_LIVE_ACCESS_RECHECK = env.float("LIZA_LIVE_ACCESS_RECHECK", default=60.0)
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # Pub/sub: a group_send is one PUBLISH whatever the number of open boards.
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    # Channels' in-memory layer with its expiry sweep throttled (liza_site/channel_layer.py).
    CHANNEL_LAYERS = {"default": {"BACKEND": "liza_site.channel_layer.InMemoryChannelLayer"}}

# The API's rate-limit counters live in Redis when there is one, so every ASGI process counts
# the same requests; they go through the process's shared client (liza_site.redis_client), not
# this cache, which under ASGI connects anew for every request. On the embedded default (one
# process, no Redis) they live in this cache, in process memory.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "liza",
            # Nothing may hang a request when Redis is slow.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# -- brute force on /login/ and /admin/login/ (django-axes) -----------------------------------
# A username that failed LIZA_LOGIN_FAILURE_LIMIT times (from any address), or an address that
# failed that often (whatever the usernames), is refused with a 429 for the cool-off, even with
# the right password. Attempts, lockouts and every sign-in/out are recorded in axes' tables,
# shown read-only in the admin (agents/admin.py); deleting an attempt there unlocks.
AXES_FAILURE_LIMIT = env.int("LIZA_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LIZA_LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# Not reset by a success: axes would then forget the failures of the success's username *and*
# of its address, so an attacker signing in to an account of their own between guesses would
# never be locked. Failures older than the cool-off no longer count.
AXES_RESET_ON_SUCCESS = False
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_CLIENT_IP_CALLABLE = "liza_site.security.client_ip"
AXES_LOCKOUT_CALLABLE = "liza_site.security.lockout_response"
# Our read-only registrations replace axes' own (agents/admin.py).
AXES_ENABLE_ADMIN = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Serve app static files straight from their source folders too, so a server started without
# `collectstatic` (tests, a developer's shell) still has its CSS and JS.
WHITENOISE_USE_FINDERS = True

# Messages live in the session, not a cookie, which a client could read or replay. (A new API
# key is never a message: it is shown on the issuing action's own no-store response.)
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "liza_site.exceptions.api_exception_handler",
    # 429 + Retry-After in the error envelope; per agent key (or signed-in user) and per client
    # address. High defaults (docs/security.md): an agent's loop makes about one call a second,
    # but the schema fuzzing and the claim benchmark send hundreds a second with one key.
    "DEFAULT_THROTTLE_CLASSES": [
        "liza_site.throttling.PrincipalRateThrottle",
        "liza_site.throttling.ClientAddressRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "principal": env.str("LIZA_API_RATE_PER_KEY", default="12000/min"),
        "address": env.str("LIZA_API_RATE_PER_IP", default="120000/min"),
    },
}

# The OpenAPI schema and Swagger UI: public by default (an open-source product's API is no
# secret); LIZA_PUBLIC_API_SCHEMA=false serves them to signed-in people and agents only.
PUBLIC_API_SCHEMA = env.bool("LIZA_PUBLIC_API_SCHEMA", default=True)
SCHEMA_AUTHENTICATION = [
    "agents.authentication.AgentKeyAuthentication",
    "rest_framework.authentication.SessionAuthentication",
]

# -- Content-Security-Policy (django-csp) -----------------------------------------------------
# Everything the board, the drawer, the oversight pages, the admin and the API docs load comes
# from this origin: no inline script or style, no other host. `'self'` in connect-src covers the
# board's websocket (ws:/wss: to the same host, CSP Level 3). tests/e2e/test_csp.py counts
# violations in Chromium.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Liza Board API",
    "DESCRIPTION": "The Liza multi-agent coding protocol as a service. Every error is "
    '`{"error": {"code", "message", "details"}}` with `details.exit`, the exit code an agent '
    "takes; what each task operation answers in each state is tabulated in "
    "docs/api-answers.md.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # PUBLIC_API_SCHEMA (above) decides who may read the schema and the docs.
    "SERVE_PERMISSIONS": [
        "rest_framework.permissions.AllowAny"
        if PUBLIC_API_SCHEMA
        else "rest_framework.permissions.IsAuthenticated"
    ],
    # Private: a session or an agent key. Public: no key is even looked at (a bad one is no
    # reason to refuse a public document).
    "SERVE_AUTHENTICATION": None if PUBLIC_API_SCHEMA else SCHEMA_AUTHENTICATION,
    # Swagger UI assets come from the sidecar package: the docs work with no network.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One named enum per protocol table, instead of drf-spectacular's hashed names.
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "boards.protocol.TASK_STATES",
        "AgentStatusEnum": "boards.protocol.AGENT_STATES",
        "GoalStatusEnum": "boards.protocol.GOAL_STATES",
        "SprintStatusEnum": "boards.protocol.SPRINT_STATES",
        "AgentRoleEnum": "boards.protocol.AGENT_ROLES",
        "CriticalityEnum": "boards.coordination.models.tasks.Task.Criticality",
        "AnomalyTypeEnum": "boards.protocol.ANOMALY_TYPES",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"once_per_redis_outage": {"()": "liza_site.outages.OncePerOutage"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    "loggers": {
        # channels_redis logs every failed reconnect of its receive loop with a traceback;
        # liza_site.outages has already logged the outage once.
        # (A logger's filters do not apply to its children: each module's logger is named.)
        "channels_redis.pubsub": {"filters": ["once_per_redis_outage"]},
        "channels_redis.core": {"filters": ["once_per_redis_outage"]},
    },
}
