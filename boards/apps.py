from django.apps import AppConfig


class BoardsConfig(AppConfig):
    name = "boards"
    verbose_name = "Liza boards"

    def ready(self) -> None:
        from boards.board.live import access

        access.connect()
