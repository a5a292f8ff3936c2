from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Liza agents"

    def ready(self) -> None:
        from agents import keycache

        keycache.connect()  # a deleted key or config row: no cached lookup trusts it any more
