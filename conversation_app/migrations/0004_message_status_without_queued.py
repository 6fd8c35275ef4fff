# A question is no longer queued behind an open context request (issue 27): it is answered at once.
# A message still queued when this runs would never get its turn; it fails saying why, so the
# person sees it and asks again.

from django.db import migrations, models


def fail_queued_messages(apps, schema_editor):
    ChatMessage = apps.get_model("conversation_app", "ChatMessage")
    ChatMessage.objects.filter(status="queued").update(
        status="failed", error="This question waited behind a request card when the chat was updated: ask it again."
    )


class Migration(migrations.Migration):
    dependencies = [
        ("conversation_app", "0003_session_in_workspaces"),
    ]

    operations = [
        migrations.RunPython(fail_queued_messages, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="chatmessage",
            name="status",
            field=models.CharField(
                choices=[
                    ("answered", "Answered"),
                    ("thinking", "Thinking"),
                    ("waiting_context", "Waiting Context"),
                    ("failed", "Failed"),
                ],
                default="thinking",
                max_length=20,
            ),
        ),
    ]
