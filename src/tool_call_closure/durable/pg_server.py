"""A throwaway PostgreSQL server for the tests, the torture command and the benchmarks.

``with pg_server() as server:`` runs ``initdb`` in a new temporary directory,
starts ``postgres`` with ``pg_ctl`` listening on a Unix socket in that
directory only (``listen_addresses=''``: no TCP port at all), yields a
:class:`PgServer` whose ``conninfo`` psycopg accepts, and stops the server and
removes the directory at the end.  ``initdb`` refuses to run as root: under
root the server runs as the ``postgres`` user (or ``nobody``), which owns the
directory.  :func:`find_bin` says where the binaries are, or ``None``
(:data:`MISSING` is the message the tests give then).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["MISSING", "PgServer", "find_bin", "pg_server"]

MISSING: Final = (
    "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin: "
    "install them (Debian/Ubuntu: apt-get install postgresql) to run the PostgreSQL store's tests"
)


def find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (``TCC_PG_BIN``, then PATH, then the newest Debian layout)."""
    given = os.environ.get("TCC_PG_BIN")
    candidates = [given] if given else []
    found = shutil.which("initdb")
    if found:
        candidates.append(str(Path(os.path.realpath(found)).parent))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for candidate in candidates:
        directory = Path(candidate)
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


@dataclass(frozen=True, slots=True)
class PgServer:
    """A running throwaway server: its socket directory and the conninfo to reach it."""

    directory: Path
    conninfo: str


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("initdb refuses root and there is no postgres or nobody user to run it as")


@contextlib.contextmanager
def pg_server() -> Iterator[PgServer]:
    """Start a throwaway server (see the module docstring); ``RuntimeError`` with :data:`MISSING` without binaries."""
    bin_dir = find_bin()
    if bin_dir is None:
        raise RuntimeError(MISSING)
    user = _run_as()
    directory = Path(tempfile.mkdtemp(prefix="tcc-pg-"))
    data = directory / "data"
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    environment = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}

    def run(*arguments: str) -> None:
        subprocess.run(
            [str(bin_dir / arguments[0]), *arguments[1:]],
            check=True,
            capture_output=True,
            user=user,
            cwd=directory,
            env=environment,
            timeout=120,
        )

    started = False
    try:
        run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-c listen_addresses='' -c unix_socket_directories='{directory}' -c fsync=on -c max_connections=60"
        run("pg_ctl", "-D", str(data), "-o", options, "-l", str(directory / "log"), "-w", "-t", "60", "start")
        started = True
        yield PgServer(directory, f"host={directory} dbname=postgres user=postgres")
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or b"").decode("utf-8", "replace").strip()
        raise RuntimeError(f"PostgreSQL server failed to start ({error.cmd[0]}): {detail}") from None
    finally:
        if started:
            with contextlib.suppress(subprocess.SubprocessError):
                run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(directory, ignore_errors=True)
