from django.urls import path

from . import views

urlpatterns = [
    path("research/conversation", views.conversation, name="conversation"),
    path("research/conversation/context-supply", views.context_supply, name="conversation-context-supply"),
]
