from django.urls import path

from boards.board.live.consumers import BoardConsumer

websocket_urlpatterns = [
    path("ws/p/<slug:slug>/", BoardConsumer.as_asgi()),
]
