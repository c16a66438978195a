"""A throwaway Dovecot IMAP server for the mail tests (the email adapter, the email channel).

Each user (by default one, `alice`) has a maildir of their own. Everything lives in a temp
directory: the config, the passwd-file, the maildirs, the log and Dovecot's runtime and state
directories, so no system path is read or written. It listens on a free loopback port without
TLS and runs in the foreground as a child process, so it can be stopped and started again on
the same port. `tests/helpers/mail_servers.py` adds an SMTP server delivering into it.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.eventually import eventually
from helpers.ports import free_port

DOVECOT = Path("/usr/sbin/dovecot")
USERNAME = "alice"
PASSWORD = "imap-password-4be2d1"

CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_internal_user = dovecot
default_login_user = dovenull
mail_uid = {uid}
mail_gid = {gid}
first_valid_uid = {uid}
last_valid_uid = {uid}
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {root}/users
  default_fields = home={root}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""


class Dovecot:
    def __init__(self, root: Path, users: dict[str, str] | None = None) -> None:
        self.root = root
        # Login name -> password.
        self.users = users or {USERNAME: PASSWORD}
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def configure(self) -> None:
        user = pwd.getpwnam("dovecot")
        # Dovecot's own users must reach the maildirs it serves as `mail_uid`.
        self.root.chmod(0o755)
        mail = self.root / "mail"
        mail.mkdir()
        os.chown(mail, user.pw_uid, user.pw_gid)
        (self.root / "users").write_text(
            "".join(f"{name}:{{PLAIN}}{password}::::::\n" for name, password in self.users.items())
        )
        (self.root / "dovecot.conf").write_text(
            CONFIG.format(root=self.root, uid=user.pw_uid, gid=user.pw_gid, port=self.port)
        )

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(DOVECOT), "-F", "-c", str(self.root / "dovecot.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        eventually(self._accepting, 30, what="dovecot accepting IMAP", context=self.log)

    def _accepting(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"dovecot exited early:\n{self.log()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                return conn.recv(64).startswith(b"* OK")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server and every session it serves.

        The master alone would wait 10 s for sessions in IDLE; its process group (the master,
        its login and mail processes, started in a session of their own) ends at once.
        """
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)
        self.process = None

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def append(self, message: bytes, mailbox: str = "INBOX", *, user: str = USERNAME) -> None:
        """Deliver `message` the way another mail client would: IMAP APPEND."""
        with self._session(user) as imap:
            typ, data = imap.append(mailbox, None, None, message)
            assert typ == "OK", data

    def unseen(self, mailbox: str = "INBOX", *, user: str = USERNAME) -> list[int]:
        """UIDs of the messages nobody has read yet."""
        with self._session(user) as imap:
            imap.select(mailbox, readonly=True)
            typ, data = imap.uid("SEARCH", "UNSEEN")
            assert typ == "OK", data
            return [int(uid) for uid in data[0].split()]

    def messages(self, mailbox: str = "INBOX", *, user: str = USERNAME) -> list[bytes]:
        """Every message in `mailbox`, oldest first, without marking any as read."""
        with self._session(user) as imap:
            imap.select(mailbox, readonly=True)
            typ, data = imap.uid("SEARCH", "ALL")
            assert typ == "OK", data
            found = []
            for uid in data[0].split():
                typ, fetched = imap.uid("FETCH", uid, "(BODY.PEEK[])")
                assert typ == "OK", fetched
                found.append(bytes(fetched[0][1]))
            return found

    @contextmanager
    def _session(self, user: str = USERNAME) -> Iterator[imaplib.IMAP4]:
        imap = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        try:
            imap.login(user, self.users[user])
            yield imap
        finally:
            imap.logout()


@contextmanager
def dovecot_server(users: dict[str, str] | None = None) -> Iterator[Dovecot]:
    root = Path(tempfile.mkdtemp(prefix="dovecot-"))
    server = Dovecot(root, users)
    try:
        server.configure()
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
