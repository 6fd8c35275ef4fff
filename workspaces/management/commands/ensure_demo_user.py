from django.core.management.base import BaseCommand

from workspaces.services import ensure_demo_user


class Command(BaseCommand):
    help = "Create the demo login (demo / demo, team Demo) if it does not exist."

    def handle(self, *args, **options):
        user, team = ensure_demo_user()
        self.stdout.write(f"demo user {user.username!r} in team {team.name!r}")
