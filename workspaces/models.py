"""Tenancy: teams, their research sessions, per-user preferences and idempotency records.

The bottom of the stack: every other app points its foreign keys down to these and
imports nothing of theirs. The tables keep the names they had in research_app, where
these models began (migrations/0001_initial.py moved them without touching a row).
"""

import uuid

from django.conf import settings
from django.db import models


class Team(models.Model):
    name = models.CharField(max_length=120, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="teams", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "research_app_team"

    def __str__(self) -> str:
        return self.name


class ResearchSession(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="sessions")
    title = models.CharField(max_length=200)
    question = models.TextField(blank=True)
    # Dollars the session's model calls may cost in all; null = settings.GROUNDWORK_SESSION_SPENDING_CAP_USD.
    spending_cap_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "research_app_researchsession"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class IdempotencyRecord(models.Model):
    """One mutation request per (user, key): its fingerprint and, once done, its response."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_fingerprint = models.CharField(max_length=64)
    # Null while the first request is still running (→ 409 for a concurrent retry).
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.BinaryField(null=True, blank=True)
    response_headers = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "research_app_idempotencyrecord"
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="unique_idempotency_key_per_user")]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status or 'in flight'})"


class UserPreference(models.Model):
    """Per-user UI switches. `ui_debug` shows the parsed-context pane (SPEC §3, seed 001 §7)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference")
    ui_debug = models.BooleanField(default=True)

    class Meta:
        db_table = "research_app_userpreference"

    def __str__(self) -> str:
        return f"preferences of {self.user}"
