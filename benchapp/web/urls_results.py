"""Results, comparisons, the archive and share links (see benchapp/urls.py)."""

from django.urls import path

from benchapp.web.views import archive, comparisons, results

urlpatterns = [
    path("runs/<int:pk>/results/", results.run_results_page, name="run_results"),
    path("runs/<int:pk>/results.json", results.run_results_json, name="run_results_json"),
    path("runs/<int:pk>/series.json", results.run_series_json, name="run_series_json"),
    path("runs/<int:pk>/export.csv", archive.export_run_csv, name="run_export_csv"),
    path("runs/<int:pk>/export.json", archive.export_run_json, name="run_export_json"),
    path("runs/<int:pk>/export.pkb.jsonl", archive.export_run_pkb, name="run_export_pkb"),
    path("runs/<int:pk>/export.bmf.json", archive.export_run_bmf, name="run_export_bmf"),
    path("runs/<int:pk>/annotate/", archive.annotate_run, name="run_annotate"),
    path("archive/", archive.archive, name="archive"),
    path("archive/import/", archive.import_page, name="archive_import"),
    path("comparisons/", comparisons.comparison_list, name="comparisons"),
    path("comparisons/new/", comparisons.comparison_new, name="comparison_new"),
    path("comparisons/<int:pk>/", comparisons.comparison_detail, name="comparison"),
    path("comparisons/<int:pk>/results.json", comparisons.comparison_json, name="comparison_json"),
    path(
        "comparisons/<int:pk>/profiles/",
        comparisons.comparison_profiles,
        name="comparison_profiles",
    ),
    path(
        "comparisons/<int:pk>/series.json", comparisons.comparison_series, name="comparison_series"
    ),
    path("comparisons/<int:pk>/save/", comparisons.comparison_save, name="comparison_save"),
    path("comparisons/<int:pk>/share/", comparisons.comparison_share, name="comparison_share"),
    path("comparisons/<int:pk>/revoke/", comparisons.comparison_revoke, name="comparison_revoke"),
    path("comparisons/<int:pk>/delete/", comparisons.comparison_delete, name="comparison_delete"),
    path(
        "comparisons/<int:pk>/export.csv",
        archive.export_comparison_csv,
        name="comparison_export_csv",
    ),
    path(
        "comparisons/<int:pk>/export.json",
        archive.export_comparison_json,
        name="comparison_export_json",
    ),
    path("share/<str:token>/", comparisons.shared, name="shared"),
    path("share/<str:token>/results.json", comparisons.shared_json, name="shared_json"),
    path("share/<str:token>/series.json", comparisons.shared_series, name="shared_series"),
]
