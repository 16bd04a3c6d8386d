"""Benchboard's Django project and app: people, persistence, scheduling."""

from benchapp.celery import app as celery_app

__all__ = ("celery_app",)
