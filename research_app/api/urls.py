"""`/api/me/preferences`, `/api/sessions…` and `/api/runs…`; the context endpoints are context_app.api.urls."""

from django.urls import include, path

from . import run_views, views

run_patterns = [
    path("events", run_views.run_events, name="run-events"),
    path("report", run_views.run_report, name="run-report"),
    path("report.md", run_views.run_report_file, {"kind": "md"}, name="run-report-md"),
    path("report.docx", run_views.run_report_file, {"kind": "docx"}, name="run-report-docx"),
    path("report.pdf", run_views.run_report_file, {"kind": "pdf"}, name="run-report-pdf"),
    path("cancel", run_views.run_cancel, name="run-cancel"),
    path("resume", run_views.run_resume, name="run-resume"),
    path("update", run_views.run_update, name="run-update"),
]

urlpatterns = [
    path("me/preferences", views.preferences, name="preferences"),
    path("sessions", views.sessions, name="sessions"),
    path("sessions/<str:sid>", views.session_detail, name="session-detail"),
    path("sessions/<str:sid>/usage", views.session_usage, name="session-usage"),
    path("sessions/<str:sid>/runs", run_views.session_runs, name="session-runs"),
    path("runs/<str:rid>", run_views.run_detail, name="run-detail"),
    path("runs/<str:rid>/", include(run_patterns)),
]
