"""kosmos's local spawner: run as `python -I -S THIS FD`, once per local host of a run.

It starts the local host's commands, inside the kernel lock where asked, and keeps nothing of
them behind. FD is its end of a SOCK_SEQPACKET socket pair with kosmos, which sends one dict a
message, in marshal's format:

  {"op": "run", "id": N, "argv": [...], "env": {...}, "cwd": DIR|null, "spec": SPEC,
   "plain": BOOL}
      with two file descriptors: the command's stdin and its output (stdout and stderr).
      Answered {"op": "started", "id": N, "pid": P} (or {"op": "failed", "id": N, "error":
      WHY}), and {"op": "exited", "pid": P, "code": C} when the command's process ends (C:
      its exit status, or minus the signal that ended it).
  {"op": "kill", "pid": P, "sig": S}    signal S to the command's whole process group
  {"op": "end", "pid": P}               the command is over for kosmos: TERM, then KILL, to
                                        what is left of its group, then it is forgotten

Each command runs in a session (and process group) of its own. With a SPEC, its child enters
the lock SPEC describes between fork and exec (lock.py's steps, the python3 prelude's:
no_new_privs, Landlock, seccomp; the ruleset built once a SPEC), so that one process start does
what `perl -e PRELUDE` and a shell around it did.

Nothing left behind: a command's process is this spawner's child, and it is reaped only after
its group's last signal, so its group's number cannot be another's when that signal is sent.
When kosmos goes (ended, killed, out of memory) its end of the socket closes: every group still
known gets TERM, a second to end, then KILL, and the spawner exits. It ignores the signals a
terminal or a group kill would send it: it ends only when kosmos has. What a locked command
leaves outside its group (a daemon) is ended too: see `Spawner.strays`.
"""

# Only modules built into the interpreter at start; ctypes and the lock's steps load once it
# is serving (see main): every command kosmos starts from it is a locked one.
import _signal  # type: ignore[import-not-found]
import _socket
import marshal
import os
import select
import sys
import time

GRACE_S = 1.0
SHELL_VARIABLES = ("BASH_ENV", "SHELLOPTS", "BASHOPTS", "EXECIGNORE")
FLAGS = os.WEXITED | os.WNOHANG | os.WNOWAIT
SIGTERM, SIGKILL = _signal.SIGTERM, _signal.SIGKILL
RESET = (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
# Room for two descriptors (ints) in a message's ancillary data.
FDS_SPACE = _socket.CMSG_SPACE(2 * 4)


def code_of(info):
    """The exit status of a waitid result, or minus the signal that ended the process."""
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


KIT: list = []  # type: ignore[type-arg]


def kit():
    """ctypes, struct, lock.py (the python3 prelude, beside this file) and libc's syscall:
    loaded once, before the first locked command where it can be."""
    if not KIT:
        import ctypes
        import struct

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import lock  # type: ignore[import-not-found]

        syscall = ctypes.CDLL(None, use_errno=True).syscall
        syscall.restype = ctypes.c_long
        KIT.extend((ctypes, struct, lock, syscall))
    return KIT


class Locked:
    """A lock SPEC made ready once (lock.py's steps up to the ruleset, which one fd holds):
    a child then needs three system calls to enter it. `error`: the step that failed."""

    def __init__(self, spec):
        self.ctypes, struct, lock, self.syscall = kit()
        self.error = None
        self.ruleset = None
        self.filter = None
        one, paths, ports = lock.parse(spec)
        self.prctl = int(one["prctl"])
        if "ruleset" in one:
            self.ruleset = lock.ruleset(one, paths, ports, self.call, self.failed)
        if "filter" in one and self.error is None:
            code = bytes.fromhex(one["filter"])
            self.instructions = self.ctypes.create_string_buffer(code, len(code))
            # struct sock_fprog: the number of instructions, then a pointer to them.
            address = self.ctypes.addressof(self.instructions)
            self.filter = struct.pack("HxxxxxxQ", len(code) // 8, address)

    def call(self, *args):
        words = [a if isinstance(a, bytes) else self.ctypes.c_long(a) for a in args]
        return self.syscall(*words)

    def failed(self, step):
        self.error = f"{step}: {os.strerror(self.ctypes.get_errno())}"

    def enter(self):
        """In the child: no_new_privs, the Landlock domain, the seccomp filter; or status 126."""
        if self.error is not None:
            refuse(self.error)
        if self.call(self.prctl, 38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            self.failed("no_new_privs")
        elif self.ruleset is not None and self.call(446, self.ruleset, 0) != 0:
            self.failed("landlock_restrict_self")
        elif self.filter is not None and self.call(self.prctl, 22, 2, self.filter, 0, 0) != 0:
            self.failed("seccomp")  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        if self.error is not None:
            refuse(self.error)


def refuse(why):
    os.write(
        2, f"kosmos: the kernel lock could not be set ({why}); the command did not run\n".encode()
    )
    os._exit(126)


def plain_path(name, env):
    """The file `name` is where every shell would exec it as it stands, else None: lock.pl's
    `plain`. The program is the first executable file on an absolute PATH, and an ELF binary
    or a `#!` script; and the environment tells no shell to do more first (BASH_ENV, a
    function exported, SHELLOPTS, BASHOPTS, EXECIGNORE)."""
    if any(k in SHELL_VARIABLES or k.startswith("BASH_FUNC_") for k in env):
        return None
    if "/" in name:
        candidates = [name]
    else:
        if "PATH" not in env:
            return None
        candidates = []
        for folder in env["PATH"].split(":"):
            if not folder.startswith("/"):
                return None
            candidates.append(f"{folder}/{name}")
    for path in candidates:
        try:
            if not os.path.isfile(path) or not os.access(path, os.X_OK):
                continue
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError:
            if os.path.exists(path):
                return None
            continue
        return path if head.startswith((b"#!", b"\x7fELF")) else None
    return None


def child(argv, env, cwd, locked, plain, stdin, out):
    """In the forked child: a session of its own, the descriptors, the lock, then exec.
    `plain`: the command (argv's last word) is plain words (hosts/wrapper.py's `plain`), which
    it execs itself where `plain_path` finds the program: one start of the shell fewer."""
    try:
        os.setsid()
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        for sig in RESET:
            _signal.signal(sig, _signal.SIG_DFL)
        if cwd is not None:
            os.chdir(cwd)
        if locked is not None:
            locked.enter()
        os.closerange(3, 1 << 20)
        if plain:
            words = argv[-1].split(" ")
            path = plain_path(words[0], env)
            if path is not None:
                os.execve(path, words, env)
        os.execve(argv[0], argv, env)
    except OSError as e:
        os.write(2, f"kosmos: the command could not be started ({e})\n".encode())
    finally:
        os._exit(126)


class Spawner:
    def __init__(self, sock):
        self.sock = sock
        self.poll = select.poll()
        self.poll.register(sock.fileno(), select.POLLIN)
        # pidfd -> pid, for the pidfds being polled.
        self.pidfds = {}
        # pid -> pidfd while the process runs, None once it has exited (not yet reaped).
        self.children = {}
        # pids whose group kosmos is done with, reaped when their process exits.
        self.ended = set()
        # Each lock SPEC, made ready at its first command.
        self.locks = {}
        self.subreaper = False

    def send(self, **message):
        try:  # noqa: SIM105 (contextlib is not loaded: the spawner starts on builtins)
            self.sock.send(marshal.dumps(message))
        except OSError:
            pass  # kosmos is gone: its end of file comes next

    def serve(self):
        control = self.sock.fileno()
        while True:
            # While commands run, a look each second for strays their processes left.
            events = self.poll.poll(1000 if self.subreaper and self.children else None)
            if not events:
                self.strays()
            for fd, _ in events:
                if fd == control:
                    if not self.message():
                        self.finish()
                        return
                elif fd in self.pidfds:
                    self.exited(self.pidfds[fd])

    def message(self):
        data, ancillary, _, _ = self.sock.recvmsg(1 << 20, FDS_SPACE)
        fds = []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                whole = len(payload) - len(payload) % 4
                fds += [
                    int.from_bytes(payload[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, whole, 4)
                ]
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        try:
            msg = marshal.loads(data)
            op = msg["op"]
            if op == "run":
                self.run(msg, fds)
            elif op == "kill":
                self.signal(msg["pid"], msg["sig"])
            elif op == "end":
                self.end(msg["pid"])
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def run(self, msg, fds):
        if len(fds) != 2:
            self.send(op="failed", id=msg["id"], error="no descriptors came with the command")
            return
        spec = msg.get("spec")
        locked = None
        if spec:
            if spec not in self.locks:
                self.locks[spec] = Locked(spec)
            locked = self.locks[spec]
            if not self.subreaper:  # PR_SET_CHILD_SUBREAPER: see strays()
                self.subreaper = locked.call(locked.prctl, 36, 1, 0, 0, 0) == 0
        try:
            pid = os.fork()
        except OSError as e:
            self.send(op="failed", id=msg["id"], error=f"fork: {e.strerror}")
            return
        if pid == 0:
            child(msg["argv"], msg["env"], msg.get("cwd"), locked, msg.get("plain"), *fds)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = None
        self.children[pid] = pidfd
        if pidfd is not None:
            self.pidfds[pidfd] = pid
            self.poll.register(pidfd, select.POLLIN)
        self.send(op="started", id=msg["id"], pid=pid)
        if pidfd is None:  # no pidfd (it cannot be: the lock needs a newer kernel): wait here
            self.exited(pid, wait=True)

    def exited(self, pid, wait=False):
        flags = FLAGS & ~os.WNOHANG if wait else FLAGS
        try:
            info = os.waitid(os.P_PID, pid, flags)
        except ChildProcessError:
            info = None
        if info is None and not wait:
            return
        pidfd = self.children.get(pid)
        if pidfd is not None:
            self.poll.unregister(pidfd)
            del self.pidfds[pidfd]
            os.close(pidfd)
        self.children[pid] = None
        self.send(op="exited", pid=pid, code=code_of(info) if info is not None else 255)
        if pid in self.ended:
            self.reap(pid)
        self.strays()

    def signal(self, pid, sig):
        # Only a group whose leader is not reaped: its number is still its own.
        if pid in self.children:
            try:  # noqa: SIM105
                os.killpg(pid, sig)
            except OSError:
                pass

    def end(self, pid):
        if pid not in self.children:
            return
        self.signal(pid, SIGTERM)
        self.signal(pid, SIGKILL)
        self.ended.add(pid)
        if self.children[pid] is None:
            self.reap(pid)
        self.strays()

    def strays(self):
        """End what a locked command left outside its group (setsid, `set -m`, a double fork),
        which the signals to the group miss. The spawner is the subreaper of what it starts, so
        such a process becomes its child once its parent has gone; one under the lock's
        no_new_privs and seccomp filter came from a locked command and is ended at once, with
        its group. Another (an approved command's daemon) runs on as ever: only its end is
        reaped. What is in the group of a command kosmos is not done with is left to its end."""
        for _ in range(20):  # an ended stray's children are the spawner's next
            found = False
            for pid in children() if self.subreaper else ():
                if pid in self.children:
                    continue
                state, group, locked = process(pid)
                if state is None or (state != "Z" and (group in self.children or not locked)):
                    continue
                if state != "Z":
                    for kill in (os.killpg, os.kill):
                        try:  # noqa: SIM105
                            kill(pid, SIGKILL)
                        except OSError:
                            pass
                try:  # noqa: SIM105
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
                found = True
            if not found:
                return

    def reap(self, pid):
        self.ended.discard(pid)
        self.children.pop(pid, None)
        try:  # noqa: SIM105
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def finish(self):
        """kosmos is gone: end every group still known, then exit."""
        for pid in list(self.children):
            self.signal(pid, SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and any(self.running()):
            time.sleep(0.02)
        for pid in list(self.children):
            self.signal(pid, SIGKILL)
            self.reap(pid)
        self.strays()

    def running(self):
        for pid in self.children:
            try:
                if os.waitid(os.P_PID, pid, FLAGS) is None:
                    yield pid
            except ChildProcessError:
                pass


def children():
    """This process's children (the kernel lists them where it can; else /proc says)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as listed:
            return [int(pid) for pid in listed.read().split()]
    except OSError:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        return [pid for pid in pids if parent(pid) == me]


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process(pid):
    """The state and group of `pid`, and whether it is under a lock (no_new_privs and a
    seccomp filter); (None, None, False) once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as status:
            text = status.read()
    except (OSError, IndexError):
        return None, None, False
    locked = "\nNoNewPrivs:\t1\n" in text and "\nSeccomp:\t2\n" in text
    return fields[0], int(fields[2]), locked


def main():
    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGPIPE):
        _signal.signal(sig, _signal.SIG_IGN)
    sock = _socket.socket(fileno=int(sys.argv[1]))
    os.set_inheritable(sock.fileno(), False)
    # kosmos starts the spawner ahead of a run's first locked command where it can (while the
    # run learns its host): what that command needs loads in the meantime. Where it cannot
    # load, the command that needs it fails as it would have.
    try:  # noqa: SIM105 (contextlib is not loaded)
        kit()
    except Exception:
        pass
    Spawner(sock).serve()


if __name__ == "__main__":
    main()
