from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from context_app import pages as context_pages
from conversation_app import pages as chat_pages
from research_app import pages as research_pages
from workspaces.api.errors import unknown_endpoint

from . import pages

urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page's <link rel="icon"> says (feeds, tabs opened on the API).
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("research_app.api.urls")),
    path("api/", include("context_app.api.urls")),
    path("api/", include("conversation_app.urls")),
    re_path(r"^api/(?P<path>.*)$", unknown_endpoint),
    path("sessions/<str:sid>/", pages.session_page, name="session-page"),
    path("sessions/<str:sid>/chat/", chat_pages.ask, name="chat-ask"),
    path("sessions/<str:sid>/chat/supply/", chat_pages.supply, name="chat-supply"),
    path("sessions/<str:sid>/runs/", research_pages.start, name="research-start"),
    path("sessions/<str:sid>/runs/<str:rid>/cancel/", research_pages.cancel, name="research-cancel"),
    path("sessions/<str:sid>/runs/<str:rid>/update/", research_pages.update_report, name="research-update"),
    path("sources/<str:version>/<str:span>/", context_pages.source_page, name="source-page"),
    path("sessions/<str:sid>/context/files/", context_pages.upload_page, name="context-upload-page"),
    path("sessions/<str:sid>/context/options/", context_pages.options_page, name="context-options-page"),
    path("sessions/<str:sid>/context/parse/", context_pages.parse_page, name="context-parse-page"),
    path("sessions/<str:sid>/context/pane/", context_pages.files_pane_fragments, name="files-pane"),
    path("sessions/<str:sid>/context/view/", context_pages.digest_view_fragment, name="digest-view"),
    path("sessions/<str:sid>/context/files/<str:fid>/", context_pages.file_preview_page, name="file-preview-page"),
    path("sessions/<str:sid>/context/files/<str:fid>/retry/", context_pages.retry_page, name="context-retry-page"),
    path("sessions/<str:sid>/context/files/<str:fid>/delete/", context_pages.delete_page, name="context-delete-page"),
    path("", include("research_app.urls")),
]
