"""URL patterns of one area (see benchapp/urls.py)."""

urlpatterns = []
