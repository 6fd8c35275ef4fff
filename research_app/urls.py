from django.urls import path

from . import views

urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("sessions/<str:sid>/", views.session_page, name="session-page"),
]
