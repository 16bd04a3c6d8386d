from django.apps import AppConfig


class BenchappConfig(AppConfig):
    name = "benchapp"
    verbose_name = "Benchboard"
