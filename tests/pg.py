"""A throw-away PostgreSQL cluster for tests and benchmarks: initdb as an unprivileged user in
a temp dir, a free port on 127.0.0.1 and a unix socket dir inside it; or the server that
CODELOOP_TEST_DATABASE_URL names. Each caller gets a fresh database."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

TEST_URL_ENV = "CODELOOP_TEST_DATABASE_URL"
SUPERUSER = "codeloop"
# initdb refuses to run as root; as root the cluster belongs to this user (or nobody).
CLUSTER_USERS = ("codeloop-ci", "nobody")


class NoPostgres(Exception):
    """Neither a PostgreSQL server nor its binaries are available."""


def pg_bindir() -> Path | None:
    """Debian's /usr/lib/postgresql/<major>/bin (newest), else initdb on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name) if
                   Path(p).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A running throw-away cluster; `url(db)` names one of its databases."""

    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="codeloop-pg-"))
        self.port = 0
        self.user: str | None = None
        try:
            self._start(durable)
        except BaseException:  # nothing runs yet that needs stopping; the files go
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _start(self, durable: bool) -> None:
        if os.geteuid() == 0:
            self.user = next((u for u in CLUSTER_USERS if _has_user(u)), None)
            if self.user is None:
                raise NoPostgres("running as root and no unprivileged user for initdb")
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                  "--no-instructions")
        # Tests want speed, not durability; the append benchmark asks for the real thing.
        fast = "" if durable else " -c fsync=off -c synchronous_commit=off " \
                                  "-c full_page_writes=off"
        # The free port is only free until someone binds it: with pytest-xdist workers (and
        # other clusters) starting at once, another may take it first, so try a fresh one.
        for attempt in range(3):
            self.port = _free_port()
            options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                       f"-c max_connections=200{fast}")
            try:
                self._run("pg_ctl", "-D", str(data), "-o", options, "-l",
                          str(self.root / "log"), "-w", "-t", "60", "start")
                return
            except NoPostgres:
                if attempt == 2 or "could not bind" not in self._log():
                    raise

    def _log(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")
        except OSError:
            return ""

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([str(self.bindir / tool), *args], capture_output=True, text=True,
                              user=self.user, cwd=self.root, timeout=120, check=False)
        if proc.returncode != 0:
            raise NoPostgres(f"{tool} failed: {proc.stderr.strip() or proc.stdout.strip()}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@contextmanager
def postgres_server(durable: bool = False) -> Iterator[str]:
    """The admin URL of a server: CODELOOP_TEST_DATABASE_URL's, or a throw-away cluster's.
    Raises NoPostgres when neither is possible."""
    given = os.environ.get(TEST_URL_ENV, "").strip()
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise NoPostgres("psycopg is not installed (pip install 'codeloop[postgres]')") from exc
    bindir = pg_bindir()
    if bindir is None:
        raise NoPostgres("no PostgreSQL binaries (apt-get install postgresql) and "
                         f"{TEST_URL_ENV} is not set")
    cluster = Cluster(bindir, durable=durable)
    try:
        yield cluster.url()
    finally:
        cluster.stop()


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """A new empty database on the server, dropped afterwards; yields its URL."""
    import psycopg

    name = f"codeloop_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_dbname(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _with_dbname(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
