"""ASGI entry point: HTTP through Django, websockets through Channels.

Websockets are authenticated by the Django session (AuthMiddlewareStack) and must come from a
page of this site or of an origin on the allow-list, scheme, host and port alike
(liza_site/websocket_origin.py), so another site cannot open a board socket with a visitor's
cookies.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "liza_site.settings")

django_asgi_app = get_asgi_application()

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
