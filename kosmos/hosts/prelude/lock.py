"""kosmos's kernel lock, in python3: run as `python3 -I -S -c THIS SPEC PROGRAM ARGS...`.

The same steps as lock.pl, for hosts without perl: no_new_privs, the Landlock domain SPEC
describes, the seccomp filter, then exec PROGRAM. SPEC's items are lock.pl's. Anything that
fails ends it with status 126 before PROGRAM runs. Only the standard library's ctypes is used.
"""

import ctypes
import os
import struct
import sys


def parse(spec):
    """SPEC's items: the single ones by key, and the `path=` and `port=` rules in order."""
    one, paths, ports = {}, [], []
    for item in spec.split():
        key, _, value = item.partition("=")
        if key == "path":
            paths.append(value)
        elif key == "port":
            ports.append(value)
        else:
            one[key] = value
    return one, paths, ports


def main(argv):
    spec, program = argv[1], argv[2:]
    one, paths, ports = parse(spec)
    probe = bool(one.get("probe"))
    report = []
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    def call(*args):
        words = [a if isinstance(a, bytes) else ctypes.c_long(a) for a in args]
        return syscall(*words)

    def failed(step):
        why = os.strerror(ctypes.get_errno())
        if probe:
            report.append(f"{step}={why}")
            return
        sys.stderr.write(
            f"kosmos: the kernel lock could not be set ({step}: {why}); the command did not run\n"
        )
        sys.stderr.flush()
        os._exit(126)

    prctl = int(one["prctl"])
    if probe:
        abi = call(444, 0, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)
        report.append(f"abi={max(abi, 0)}")
        if abi <= 0:
            report.append(f"why={os.strerror(ctypes.get_errno())}")

    if call(prctl, 38, 1, 0, 0, 0) == 0:  # PR_SET_NO_NEW_PRIVS
        if probe:
            report.append("nnp=ok")
    else:
        failed("no_new_privs")

    if "ruleset" in one:
        landlock(one, paths, ports, call, failed, report if probe else None)

    if "filter" in one:
        code = bytes.fromhex(one["filter"])
        instructions = ctypes.create_string_buffer(code, len(code))
        # struct sock_fprog: the number of instructions, then a pointer to them.
        fprog = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(instructions))
        if call(prctl, 22, 2, fprog, 0, 0) == 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
            if probe:
                report.append("seccomp=ok")
        else:
            failed("seccomp")

    if probe:
        print(";".join(report))
        return
    try:
        os.execvp(program[0], program)
    except OSError as e:
        ctypes.set_errno(e.errno or 0)
        failed(f"exec {program[0]}")


def landlock(one, paths, ports, call, failed, report):
    fd = ruleset(one, paths, ports, call, failed)
    if fd is None:
        return None
    if call(446, fd, 0) != 0:
        return failed("landlock_restrict_self")
    os.close(fd)
    if report is not None:
        report.append("landlock=ok")
    return None


def ruleset(one, paths, ports, call, failed):
    """The Landlock ruleset SPEC's items describe, as a file descriptor (None: a step failed,
    which `failed` was told). Entered with landlock_restrict_self, by as many as need it."""
    size, fs, net, scoped = (int(n) for n in one["ruleset"].split(":"))
    attr = struct.pack("QQQ", fs, net, scoped)[:size]
    fd = call(444, attr, size, 0)
    if fd < 0:
        return failed("landlock_create_ruleset")
    for rule in paths:
        access, _, path = rule.partition(":")
        try:
            handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as e:
            ctypes.set_errno(e.errno or 0)
            return failed(f"open {path}")
        if call(445, fd, 1, struct.pack("=Qi", int(access), handle), 0) != 0:
            return failed(f"landlock_add_rule {path}")
        os.close(handle)
    for rule in ports:
        access, _, port = rule.partition(":")
        if call(445, fd, 2, struct.pack("QQ", int(access), int(port)), 0) != 0:
            return failed(f"landlock_add_rule port {port}")
    return fd


if __name__ == "__main__":
    main(sys.argv)
