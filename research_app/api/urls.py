from django.urls import path

from . import run_views, views

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
    path("sessions/<str:sid>/runs", run_views.session_runs, name="session-runs"),
    path("runs/<str:rid>", run_views.run_detail, name="run-detail"),
    path("runs/<str:rid>/events", run_views.run_events, name="run-events"),
    path("runs/<str:rid>/report", run_views.run_report, name="run-report"),
    path("runs/<str:rid>/cancel", run_views.run_cancel, name="run-cancel"),
    path("runs/<str:rid>/resume", run_views.run_resume, name="run-resume"),
]
