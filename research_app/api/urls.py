from django.urls import path

from . import views

urlpatterns = [
    path("me/preferences", views.preferences, name="preferences"),
    path("sessions", views.sessions, name="sessions"),
    path("sessions/<str:sid>", views.session_detail, name="session-detail"),
    path("sessions/<str:sid>/context", views.context, name="context"),
    path("sessions/<str:sid>/context/digest", views.context_digest, name="context-digest"),
    path("sessions/<str:sid>/context/parse", views.context_parse, name="context-parse"),
    path("sessions/<str:sid>/context/files", views.context_files, name="context-files"),
    path("sessions/<str:sid>/context/files/<str:fid>", views.context_file, name="context-file"),
    path("sessions/<str:sid>/context/files/<str:fid>/retry", views.context_file_retry, name="context-file-retry"),
    path("sessions/<str:sid>/context/files/<str:fid>/preview", views.context_file_preview, name="context-file-preview"),
    path(
        "sessions/<str:sid>/context/files/<str:fid>/download", views.context_file_download, name="context-file-download"
    ),
    path("sessions/<str:sid>/context/files/<str:fid>/digest", views.context_file_digest, name="context-file-digest"),
]
