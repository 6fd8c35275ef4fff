from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from workspaces.api.errors import unknown_endpoint

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
    path("", include("research_app.urls")),
]
