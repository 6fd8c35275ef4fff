"""The README's API steps, pasted into a fresh shell while the product runs, work as written (issue 27).

Every ```sh block of README.md's "Using the API" section runs, in order, in one bash with
`set -euo pipefail` and the environment a fresh shell has: no DEBUG, no SECRET_KEY, no
Django settings module; only the var directory holding the key `make run` writes and the
database the server uses. The one change is the server's address (the live server's port
instead of localhost:8000). A step whose answer lacks the field the next one reads stops
the script; every answer must be JSON.
"""

import json
import os
import re
import secrets
import subprocess
from pathlib import Path

import pytest
from django.db import connection

from conversation_app.models import ChatMessage, ContextSupply
from research_app.models import ResearchRun, ResearchSession
from tests.production import databases
from workspaces.services import ensure_demo_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.one_database]

ROOT = Path(__file__).resolve().parent.parent


def api_steps() -> str:
    section = (ROOT / "README.md").read_text().split("\n## Using the API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) >= 4, "the section's shell blocks"
    return "\n".join(blocks)


def json_values(output: str) -> list:
    """The JSON documents curl printed one after another (an answer ends without a newline)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := len(output) - len(output[at:].lstrip())) < len(output):
        value, at = decoder.raw_decode(output, at)
        values.append(value)
    return values


def test_the_readme_api_steps_run_as_written(live_server_url, tmp_path):
    ensure_demo_user()  # what `make run` does before it prints the login
    (tmp_path / "secret_key").write_text(secrets.token_urlsafe(50) + "\n")
    script = api_steps().replace("localhost:8000", live_server_url.removeprefix("http://"))
    fresh_shell = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GROUNDWORK_VAR_DIR": str(tmp_path),
        "DATABASE_URL": databases.database_url(connection.settings_dict),
    }
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=ROOT,
        env=fresh_shell,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    answers = json_values(done.stdout)
    printed = len(re.findall(r"^curl ", script, re.M))  # the steps whose answer is shown, not read into a variable
    assert len(answers) == printed and all(isinstance(answer, dict) for answer in answers), done.stdout

    session = ResearchSession.objects.get(title="Leak study")
    assert list(session.context_set.files.values_list("filename", flat=True)) == ["notes.md"]
    assert ResearchRun.objects.filter(session=session, question="Did the valves pay off?").exists()
    assert ChatMessage.objects.filter(conversation__session=session, role=ChatMessage.Role.ASSISTANT).exists()
    assert ContextSupply.objects.filter(request__conversation__session=session).exists()
