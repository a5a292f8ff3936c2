"""WSGI entry point (management tooling; the product itself serves ASGI)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "liza_site.settings")

application = get_wsgi_application()
