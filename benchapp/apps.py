from django.apps import AppConfig


class BenchappConfig(AppConfig):
    name = "benchapp"
    verbose_name = "Benchboard"

    def ready(self):
        # Its post_delete receiver removes a deleted output's object.
        from benchapp.store import artifactstore  # noqa: F401
