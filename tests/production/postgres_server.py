"""A throwaway PostgreSQL cluster on a free loopback port, for the test session.

Debian's `postgresql` package (installed by `make test`'s system-packages step) puts
initdb and pg_ctl in /usr/lib/postgresql/<version>/bin. initdb refuses to run as root,
so when the suite runs as root (CI) the cluster runs as the `postgres` user (or
`nobody`), in a temporary directory it owns. Durability is off: the cluster dies
with the session.
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import psycopg

from tests.redis_server import free_port

SUPERUSER = "groundwork"


def postgres_bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    raise RuntimeError("PostgreSQL is not installed; `make test` installs it (apt-get install postgresql)")


def _run_as() -> dict:
    """subprocess keyword arguments that drop root to an unprivileged user; nothing when not root."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


class PostgresServer:
    def __init__(self) -> None:
        bin_dir = postgres_bin_dir()
        self.port = free_port()
        as_user = _run_as()
        # Under /tmp when dropping root: the unprivileged user must reach it (a TMPDIR under /root it could not).
        self.dir = tempfile.mkdtemp(prefix="groundwork-postgres-", dir="/tmp" if as_user else None)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        if as_user:
            os.chown(self.dir, as_user["user"], as_user["group"])
        self._pg_ctl = os.path.join(bin_dir, "pg_ctl")
        self._as_user = as_user
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        subprocess.run(
            [
                os.path.join(bin_dir, "initdb"),
                "-D",
                self.data,
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            env=env,
            cwd=self.dir,
            **as_user,
        )
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                f"-c unix_socket_directories={self.dir}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
                # A deadlock is reported after 1 s of waiting, so a test that caused one fails fast.
                "-c deadlock_timeout=1s",
            ]
        )
        result = subprocess.run(
            [self._pg_ctl, "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", "30", "start"],
            capture_output=True,
            env=env,
            cwd=self.dir,
            **as_user,
        )
        if result.returncode != 0:
            log = open(self.log).read() if os.path.exists(self.log) else ""
            self.stop()
            raise RuntimeError(f"PostgreSQL did not start: {result.stderr.decode()} {log}")
        self.url = f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/groundwork"
        self._create_database("groundwork")

    def _create_database(self, name: str) -> None:
        deadline = time.monotonic() + 10
        while True:
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True
                ) as connection:
                    connection.execute(f'CREATE DATABASE "{name}"')
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            subprocess.run(
                [self._pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop"],
                capture_output=True,
                cwd=self.dir,
                **self._as_user,
            )
        shutil.rmtree(self.dir, ignore_errors=True)
