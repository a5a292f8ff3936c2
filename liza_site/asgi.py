"""ASGI entry point: HTTP through Django, websockets through Channels.

HTTP goes through Django's ASGI handler, except the views marked `one_hop` (the agents'
heartbeat and claim-next), served in one thread hop (liza_site/asgi_handler.py).

Websockets are authenticated by the Django session (AuthMiddlewareStack) and must come from a
page of this site or of an origin on the allow-list, scheme, host and port alike
(liza_site/websocket_origin.py), so another site cannot open a board socket with a visitor's
cookies.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "liza_site.settings")

# What django.core.asgi.get_asgi_application does, with the handler that serves the agents'
# hot routes in one thread hop (liza_site/asgi_handler.py).
django.setup(set_prefix=False)

from liza_site.asgi_handler import OneHopASGIHandler  # noqa: E402

django_asgi_app = OneHopASGIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from boards.board.live.routing import websocket_urlpatterns  # noqa: E402
from liza_site.websocket_origin import SameOriginValidator  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
