"""Real shells as the judge of the approval policy.

`ShellJudge` runs a command under real `bash` or `dash` as a throwaway unprivileged user, in a
fresh copy of a scratch directory full of canary files, under `strace -f` and inside a network
namespace where every address is local and answered (`tests/netcatch.py`). `Outcome` says
which canary paths changed, appeared or vanished, which programs started (every execve, by
any path), and what reached past the command's own processes (`tests/tracelog.py`): a TCP
connection that is not an http or https read, a datagram to anything but DNS, a bind or
listen, a netlink message that is not a query, a unix socket of a local service. A command
the policy rates read-only must change nothing, start only programs on the policy's
read-only list that it names, and reach nothing (unix sockets only when the verdict says it
reads through a local service).

The canaries include an executable `evil.sh` that deletes DIR and creates PWNED, a git
repository, an archive and files whose names look like options, so that a command which
smuggles something past the policy has something to break.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kosmos.hosts.runner import COMMAND_ENV
from tests.helpers import need
from tests.tracelog import TRACED, read_trace

SHELLS = {"bash": "/bin/bash", "dash": "/bin/dash"}
# The programs the judge runs, each with its Debian package: strace for `run`, setpriv for
# `output`, the others to set the judge up.
TOOLS = {
    "bash": "bash",
    "dash": "dash",
    "useradd": "passwd",
    "userdel": "passwd",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
    "git": "git",
    "pkill": "procps",
}
PROGRAM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
RUN_TIMEOUT = 5.0
NETCATCH = Path(__file__).with_name("netcatch.py")
# Caches a reading client keeps in its home, which hold no content of their own: kubectl's
# discovery and HTTP caches (`kubectl get` fills them from the API server it reads).
CACHES = ("home/.kube/", "home/.kube/cache/")

EVIL = "#!/bin/sh\n/bin/rm -rf DIR; /usr/bin/touch PWNED\n"
# Programs that a hijacked PATH (./evilbin) would replace with evil.sh.
EVILBIN = ("ls", "cat", "grep", "git", "id", "ps", "echo", "head", "sh", "bash", "nosuchcommand")
CANARIES = {
    "F": "canary F\n",
    "G": "canary G\n",
    "file": "alpha\nbeta\n",
    "file.txt": "one\ntwo\n",
    "a": "a\n",
    "b": "b\n",
    "x": "x\n",
    "in.txt": "in\n",
    "out.txt": "out\n",
    "schema.sql": "create table t (id int);\n",
    "data.json": '{"a": 1, "b": [1, 2]}\n',
    "app.log": "ok\nerror: disk\n",
    "cert.pem": "not a certificate\n",
    "deploy.yaml": "kind: Pod\n",
    "-rf": "named like an option\n",
    "-i": "named like an option\n",
    "-delete": "named like an option\n",
    ".hidden": "hidden\n",
    "DIR/inner.txt": "inner\n",
    "DIR/sub/deep.txt": "deep\n",
    "log/app.log": "line\n",
}


@dataclass
class Outcome:
    command: str
    shell: str
    changed: list[str] = field(default_factory=list)
    # Every program started but the shell itself: its path, then its argv.
    programs: list[list[str]] = field(default_factory=list)
    reaches: list[str] = field(default_factory=list)  # traffic a read may not make
    services: list[str] = field(default_factory=list)  # unix sockets of local services
    timed_out: bool = False

    def names(self) -> list[str]:
        return [argv[0].rsplit("/", 1)[-1] for argv in self.programs if argv]

    def strangers(self) -> list[str]:
        """Programs started from outside the system's program directories."""
        return [p[0] for p in self.programs if p and p[0].rsplit("/", 1)[0] not in PROGRAM_DIRS]


def _snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every path under root with its stat data: a write, chmod or rename changes its ctime."""
    seen: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if Path(dirpath, d).is_symlink()]:
            path = Path(dirpath, name)
            st = path.lstat()
            target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
            seen[str(path.relative_to(root))] = (
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_uid,
                target,
            )
        st = Path(dirpath).lstat()
        seen[str(Path(dirpath).relative_to(root)) + "/"] = (st.st_mode, st.st_uid)
    return seen


def _staged(git_dir: Path) -> str:
    """What a git index stages: git refreshes the stat cache in its index on a plain
    `git diff` (GIT_OPTIONAL_LOCKS does not stop it there), which changes no content."""
    staged = subprocess.run(
        ["git", "-c", "safe.directory=*", f"--git-dir={git_dir}", "ls-files", "--stage"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GIT_OPTIONAL_LOCKS": "0"},
    )
    return staged.stdout + staged.stderr


def _diff(before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]]) -> list[str]:
    out = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            out.append(f"removed {path}")
        elif path not in before:
            out.append(f"created {path}")
        elif before[path] != after[path]:
            out.append(f"changed {path}")
    return out


@dataclass
class _Slot:
    path: Path
    trace: Path  # root's: the command cannot touch it
    baseline: dict[str, tuple[object, ...]]
    staged: str


class ShellJudge:
    """A throwaway user, the canary template and the network namespace; `run` judges one
    command."""

    def __init__(self, root: Path, tag: str, ports: tuple[int, ...] = ()) -> None:
        for tool, package in TOOLS.items():
            need(tool, package)
        self.root = root
        self.user = f"kp-{os.getpid()}-{tag}"[:32]
        self.runs = root / "runs"
        self.runs.mkdir(parents=True)
        self.runs.chmod(0o755)
        root.chmod(0o755)
        for parent in root.parents:  # the user must reach its scratch directories
            if parent.stat().st_uid == 0 and not parent.stat().st_mode & 0o001:
                parent.chmod(parent.stat().st_mode | 0o001)
        subprocess.run(
            ["useradd", "-M", "-d", str(root / "nohome"), "-s", "/bin/sh", self.user],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.template = root / "template"
        self._write_template()
        self._count = 0
        self._free: list[_Slot] = []
        self._lock = threading.Lock()
        # What the uid already owned (left by an earlier user that had it) is not this run's.
        self._owned_before = set(self._owned())
        self._net = subprocess.Popen(
            ["unshare", "--net", sys.executable, str(NETCATCH), *map(str, ports)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._net.stdout is not None
        if self._net.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the judge's network namespace did not come up")

    def close(self) -> None:
        for pipe in (self._net.stdin, self._net.stdout):
            if pipe is not None:
                pipe.close()  # the listener ends when its input does
        try:
            self._net.wait(5)
        except subprocess.TimeoutExpired:
            self._net.kill()
            self._net.wait()
        subprocess.run(["pkill", "-KILL", "-u", self.user], capture_output=True)
        subprocess.run(["userdel", self.user], capture_output=True)
        # The next user may get the same uid: leave nothing it would seem to own.
        shutil.rmtree(self.root, ignore_errors=True)

    # -- set-up -----------------------------------------------------------------------------

    def _write_template(self) -> None:
        work = self.template / "work"
        for rel, text in CANARIES.items():
            path = work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for rel in ("evil.sh", *(f"evilbin/{name}" for name in EVILBIN)):
            path = work / rel
            path.parent.mkdir(exist_ok=True)
            path.write_text(EVIL)
            path.chmod(0o755)
        with gzip.open(work / "a.gz", "wb") as f:
            f.write(b"zipped\n")
        with tarfile.open(work / "a.tar", "w") as tar:
            tar.add(work / "x", arcname="x")
        (self.template / "home").mkdir()
        (self.template / "tmp").mkdir()
        for dirpath, dirnames, filenames in os.walk(self.template):
            for name in [*dirnames, *filenames, "."]:
                os.chown(Path(dirpath, name), self.uid, self.gid)
        repo = work / "repo"
        repo.mkdir()
        os.chown(repo, self.uid, self.gid)
        git = (
            "git init -q && git config user.email t@example.com && git config user.name t "
            "&& echo tracked > tracked.txt && git add tracked.txt && git commit -qm init "
            "&& git status --porcelain >/dev/null"
        )
        subprocess.run(
            ["/bin/sh", "-c", git],
            cwd=repo,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.template / "home")},
            check=True,
            capture_output=True,
        )

    def _copy(self, dest: Path) -> None:
        shutil.copytree(self.template, dest, symlinks=True)
        for dirpath, dirnames, filenames in os.walk(dest):
            for name in [*dirnames, *filenames, "."]:
                os.chown(Path(dirpath, name), self.uid, self.gid, follow_symlinks=False)

    def _slot(self) -> _Slot:
        """A scratch copy of the template that no other run is using."""
        with self._lock:
            if self._free:
                return self._free.pop()
            self._count += 1
            path = self.runs / str(self._count)
        self._copy(path)
        trace = self.runs / f"{path.name}.trace"
        return _Slot(path, trace, _snapshot(path), _staged(path / "work/repo/.git"))

    def _changes(self, slot: _Slot) -> list[str]:
        after = _snapshot(slot.path)
        index = "work/repo/.git/index"
        refreshed = index in after and after[index] != slot.baseline.get(index)
        if refreshed and _staged(slot.path / "work/repo/.git") == slot.staged:
            slot.baseline[index] = after[index]
        return [
            change
            for change in _diff(slot.baseline, after)
            if not change.split(" ", 1)[1].startswith(CACHES[1])
            and change.split(" ", 1)[1] != CACHES[0]
        ]

    # -- one command --------------------------------------------------------------------------

    def run(self, command: str, shell: str) -> Outcome:
        """Run `command` under `shell` (bash or dash) and report what it did."""
        need("strace", "strace")
        slot = self._slot()
        scratch = slot.path
        env = {
            **COMMAND_ENV,
            "PATH": ":".join(PROGRAM_DIRS),
            "HOME": str(scratch / "home"),
            "TMPDIR": str(scratch / "tmp"),
            "USER": self.user,
            "LOGNAME": self.user,
            "LANG": "C.UTF-8",
        }
        outcome = Outcome(command, shell)
        # strace starts the shell as the user: the trace file stays root's.
        proc = subprocess.Popen(
            ["nsenter", f"--net=/proc/{self._net.pid}/ns/net"]
            + ["strace", "-f", "-qq", "-yy", "-s", "128", "--seccomp-bpf", "-e", "signal=none"]
            + ["-e", f"trace={TRACED}", "-o", str(slot.trace), "-u", self.user]
            + [SHELLS[shell], "-c", command],
            cwd=scratch / "work",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
        # Whatever the command left behind in its group (`sleep 9 &`) ends with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        outcome.changed = self._changes(slot)
        trace = read_trace(slot.trace.read_text(errors="replace"))
        outcome.programs = trace.execs[1:]  # the first is the shell itself
        outcome.reaches, outcome.services = trace.reaches, trace.services
        slot.trace.unlink()
        if outcome.changed:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            with self._lock:
                self._free.append(slot)
        return outcome

    def output(self, argv: list[str], timeout: float = 2.0, place: str = "probe") -> str:
        """What `argv` (no shell) prints to stdout and stderr, run as the user inside the
        namespace in `place`, a scratch copy of the canary git repository; for asking a
        program how it reads its options."""
        need("setpriv", "util-linux")
        probe = self.root / place
        if not probe.exists():
            shutil.copytree(self.template / "work" / "repo", probe, symlinks=True)
            for dirpath, dirnames, filenames in os.walk(probe):
                for name in [*dirnames, *filenames, "."]:
                    os.chown(Path(dirpath, name), self.uid, self.gid, follow_symlinks=False)
        env = {"PATH": ":".join(PROGRAM_DIRS), "HOME": str(probe), "LANG": "C"}
        ids = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        try:
            done = subprocess.run(
                ["nsenter", f"--net=/proc/{self._net.pid}/ns/net", "setpriv", *ids, *argv],
                cwd=probe,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                start_new_session=True,
            )
            text = done.stdout + done.stderr
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"") + (e.stderr or b"")
        return text.decode(errors="replace")

    def leftovers(self) -> list[str]:
        """Files the user came to own outside its scratch directories (there should be none)."""
        return [path for path in self._owned() if path not in self._owned_before]

    def _owned(self) -> list[str]:
        found = []
        for top in ("/tmp", "/var/tmp", "/dev/shm"):
            for dirpath, dirnames, filenames in os.walk(top):
                # Its own scratch, and pytest's kept temporary folders of earlier runs, whose
                # throwaway users may have had the same uid.
                if Path(dirpath).is_relative_to(self.root) or "pytest-of-" in dirpath:
                    dirnames[:] = []
                    continue
                for name in dirnames + filenames:
                    path = Path(dirpath, name)
                    with contextlib.suppress(OSError):
                        if path.lstat().st_uid == self.uid:
                            found.append(str(path))
        return found
