"""`/api/sessions/{sid}/context…` and `/api/sources/{version}/{span}` (included under `api/` by config/urls.py)."""

from django.urls import include, path

from . import sources, views

file_patterns = [
    path("retry", views.context_file_retry, name="context-file-retry"),
    path("preview", views.context_file_preview, name="context-file-preview"),
    path("download", views.context_file_download, name="context-file-download"),
    path("digest", views.context_file_digest, name="context-file-digest"),
]

context_patterns = [
    path("digest", views.context_digest, name="context-digest"),
    path("parse", views.context_parse, name="context-parse"),
    path("files", views.context_files, name="context-files"),
    path("files/<str:fid>", views.context_file, name="context-file"),
    path("files/<str:fid>/", include(file_patterns)),
]

urlpatterns = [
    path("sources/<str:version>/<str:span>", sources.source_detail, name="source-detail"),
    path("sessions/<str:sid>/context", views.context, name="context"),
    path("sessions/<str:sid>/context/", include(context_patterns)),
]
