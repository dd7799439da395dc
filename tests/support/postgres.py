"""A throwaway PostgreSQL server for the test session.

Uses the machine's PostgreSQL binaries (`initdb`, `pg_ctl` on PATH or under
`/usr/lib/postgresql/<version>/bin`), listens on 127.0.0.1 only on a free port, keeps its data
in a temporary directory and is stopped at the end. PostgreSQL refuses to run as root: when the
tests run as root the server runs as the `postgres` system user (`runuser -u postgres --`) with
a data directory owned by that user.

If `FUNCHOST_TEST_POSTGRES_DSN` is set, that server is used instead and nothing is started.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV_DSN = "FUNCHOST_TEST_POSTGRES_DSN"
START_TIMEOUT = 60.0
RUN_AS = "postgres"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL could not be started or reached; the message says why and how to fix it."""


def find_binaries() -> Path:
    """The directory holding initdb and pg_ctl."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                        key=lambda p: [int(x) for x in p.split("/")[-2].split(".") if x.isdigit()])
    for directory in reversed(candidates):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    raise PostgresUnavailable(
        "PostgreSQL binaries (initdb, pg_ctl) not found on PATH or under /usr/lib/postgresql/*/bin; "
        f"install PostgreSQL or set {ENV_DSN} to a server's DSN")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    dsn: str
    started: bool = False
    root: Path | None = None
    bindir: Path | None = None
    run_as: str | None = None
    log_file: Path | None = None
    _cmd_prefix: list[str] = field(default_factory=list)

    def restart(self) -> None:
        """`pg_ctl restart` with a fast shutdown: every session is ended, as when an operator
        restarts the server (only a server this test session started can be restarted)."""
        if not self.started or self.root is None or self.bindir is None:
            raise PostgresUnavailable(f"cannot restart the server named by {ENV_DSN}; unset it to let the tests "
                                      "start their own")
        _run([*self._cmd_prefix, str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-l",
              str(self.log_file), "-m", "fast", "-w", "-t", str(int(START_TIMEOUT)), "restart"],
             "pg_ctl restart", self.log_file)
        wait_ready(self.dsn)

    def stop(self) -> None:
        if not self.started or self.root is None or self.bindir is None:
            return
        subprocess.run([*self._cmd_prefix, str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"),
                        "-m", "immediate", "-w", "-t", "30", "stop"],
                       capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.started = False


def _run(cmd: list[str], what: str, log_file: Path | None = None) -> None:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PostgresUnavailable(f"{what} failed: {exc}") from exc
    if result.returncode != 0:
        tail = ""
        if log_file is not None and log_file.exists():
            tail = "\n--- server log ---\n" + log_file.read_text(errors="replace")[-2000:]
        raise PostgresUnavailable(
            f"{what} failed (exit {result.returncode}): {result.stderr.strip() or result.stdout.strip()}{tail}")


def wait_ready(dsn: str, timeout: float = START_TIMEOUT) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.Error as exc:
            last = exc
            time.sleep(0.2)
    raise PostgresUnavailable(f"PostgreSQL did not accept connections within {timeout:.0f}s: {last}")


def start_postgres() -> PostgresServer:
    """Start a server (or adopt the one named by FUNCHOST_TEST_POSTGRES_DSN)."""
    dsn = os.environ.get(ENV_DSN)
    if dsn:
        wait_ready(dsn, timeout=15)
        return PostgresServer(dsn=dsn)
    bindir = find_binaries()
    root = Path(tempfile.mkdtemp(prefix="funchost-pg-"))
    prefix: list[str] = []
    run_as: str | None = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam(RUN_AS)
        except KeyError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise PostgresUnavailable(
                f"running as root and there is no '{RUN_AS}' system user to run PostgreSQL as; create it "
                f"(useradd --system {RUN_AS}) or set {ENV_DSN}") from exc
        os.chown(root, user.pw_uid, user.pw_gid)
        runuser = shutil.which("runuser")
        if runuser is None:
            raise PostgresUnavailable(f"running as root but 'runuser' is missing; set {ENV_DSN}")
        prefix = [runuser, "-u", RUN_AS, "--"]
        run_as = RUN_AS
    port = free_port()
    data, log_file = root / "data", root / "server.log"
    server = PostgresServer(dsn=f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
                            root=root, bindir=bindir, run_as=run_as, log_file=log_file, _cmd_prefix=prefix)
    try:
        _run([*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
              "-E", "UTF8", "--no-locale", "--no-sync"], "initdb")
        options = f"-h 127.0.0.1 -p {port} -k {root} -F -c max_connections=200"
        _run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log_file), "-o", options,
              "-w", "-t", str(int(START_TIMEOUT)), "start"], "pg_ctl start", log_file)
        server.started = True
        wait_ready(server.dsn)
    except BaseException:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server
