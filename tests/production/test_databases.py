"""The suite runs on the database `make test` asked for, and the other processes open the same one."""

import pytest
from django.db import connection

from tests.production import databases


@pytest.mark.django_db
def test_the_suite_runs_on_the_database_it_was_asked_for():
    expected = "postgresql" if databases.wants_postgres() else "sqlite"
    assert connection.vendor == expected
    url = databases.database_url(connection.settings_dict)
    assert url.startswith("postgres://" if expected == "postgresql" else "sqlite:///")
    assert url.endswith(str(connection.settings_dict["NAME"])), "the test database, not the product's"
