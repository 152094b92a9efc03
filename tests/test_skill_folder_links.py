"""A skill folder takes nothing from outside itself to a host: no link is followed, no special
file travels, and a host without sftp still gets the files, private to its user."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from kosmos.hosts.ssh_upload import _UNTAR, tar_of
from kosmos.skills.folder import collect_folder
from kosmos.skills.loader import load_skill_file
from tests.conftest import run_cli
from tests.helpers import need
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home
from tests.test_skill_folders import events, run_the_script, skill_folder


def _refused(proc: subprocess.CompletedProcess[str], *, llm: ScriptedLLM) -> str:
    """The one line a refused folder ends the run with; nothing reached the LLM."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("kosmos: ")]
    assert llm.requests == []
    return line


@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("{home}/.ssh/id_ed25519", "a link to {home}/.ssh/id_ed25519, outside the skill's folder"),
        ("/proc/self/environ", "a link to /proc/self/environ, outside the skill's folder"),
        ("../../../../outside.txt", "a link to ../../../../outside.txt, outside"),
        ("missing.txt", "a link to missing.txt that points at nothing"),
        ("../.hidden", "a link to ../.hidden, which does not travel with the skill"),
    ],
)
def test_a_link_that_leaves_the_folder_is_refused_naming_file_and_target(
    llm: ScriptedLLM, cli_env: dict, home: Path, tmp_path: Path, target: str, named: str
) -> None:
    (home / ".ssh").mkdir()
    (home / ".ssh/id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    (tmp_path / "outside.txt").write_text("not the skill's\n")
    folder = skill_folder(tmp_path)
    link = folder / "scripts/notes.txt"
    link.symlink_to(target.format(home=home))
    llm.script("[DONE] never")
    proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path)
    line = _refused(proc, llm=llm)
    assert line.startswith(f"kosmos: {link}: {named.format(home=home)}"), line


def test_special_files_and_names_that_are_not_utf8_are_refused_in_one_line(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    folder = skill_folder(tmp_path)
    fifo = folder / "assets.fifo"
    os.mkfifo(fifo)
    llm.script("[DONE] never")
    # A FIFO would block a read for good: refused, at once.
    proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path)
    assert _refused(proc, llm=llm) == (
        f"kosmos: {fifo}: a FIFO; only files (and links to files of the folder) travel with a "
        "skill, so remove it or move it out of the folder"
    )
    fifo.unlink()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(folder / "agent.sock"))
        proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path)
    assert ": a socket; only files" in _refused(proc, llm=llm)
    (folder / "agent.sock").unlink()
    name = os.fsencode(folder / "scripts") + b"/caf\xe9.txt"
    with open(name, "wb") as f:
        f.write(b"latin-1 name\n")
    proc = run_cli(["run", "probe", "--non-interactive", "--yes"], env=cli_env, cwd=tmp_path)
    assert _refused(proc, llm=llm) == (
        f"kosmos: {folder}/scripts/caf\\xe9.txt: a file name that is not UTF-8; rename it (or "
        "move it out of the folder), the files beside SKILL.md go to the host by name"
    )


def test_a_link_within_the_folder_travels_as_a_link(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path)
    (folder / "scripts/run.sh").symlink_to("hello.sh")
    (folder / "references/script").symlink_to(folder / "scripts/hello.sh")  # absolute
    (folder / "lib").symlink_to("scripts")
    found = collect_folder(load_skill_file(folder / "SKILL.md", "test"))
    assert found is not None
    links = {f.path: f.link for f in found.files if f.link is not None}
    assert links == {
        "lib": "scripts",
        "references/script": "../scripts/hello.sh",
        "scripts/run.sh": "hello.sh",
    }


@pytest.mark.parametrize("server", ["sshd", "bare_sshd"])
def test_the_files_arrive_private_with_links_and_exec_bits(
    llm: ScriptedLLM,
    cli_env: dict,
    home: Path,
    tmp_path: Path,
    server: str,
    request: pytest.FixtureRequest,
) -> None:
    """Over sftp, and through the command channel from an sshd without `Subsystem sftp`."""
    sshd: Sshd = request.getfixturevalue(server)
    write_client_home(home, sshd)
    env = {k: v for k, v in cli_env.items() if k != "SSH_AUTH_SOCK"}
    folder = skill_folder(tmp_path)
    (folder / "scripts/run.sh").symlink_to("hello.sh")
    llm.default = run_the_script
    args = ["run", "probe", "--host", "box", "--non-interactive", "--yes", "--json"]
    try:
        proc = run_cli(args, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        ready = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
        copy = Path(ready["base"])
        assert (
            ready["how"] == "uploaded" and copy.parent == sshd.remote_home / ".cache/kosmos/skills"
        )
        assert os.readlink(copy / "scripts/run.sh") == "hello.sh"
        modes = {
            str(p.relative_to(copy)): stat.S_IMODE(p.lstat().st_mode)
            for p in copy.rglob("*")
            if not p.is_symlink()
        }
        assert modes == {
            "references": 0o700,
            "references/notes.md": 0o600,
            "scripts": 0o700,
            "scripts/hello.sh": 0o700,
        }
        assert stat.S_IMODE(copy.stat().st_mode) == 0o700
        owner = (sshd.remote_home / ".ssh").stat().st_uid
        assert {p.lstat().st_uid for p in copy.rglob("*")} == {owner}
        notices = [e["message"] for e in events(proc.stdout) if e["type"] == "warning"]
        said = [n for n in notices if "sftp" in n]
        if server == "bare_sshd":
            assert said == [
                "box: its sshd offers no sftp subsystem, so the skill's files went through the "
                "command channel (a tar piped to `tar -x`)"
            ]
        else:
            assert said == []
        assert llm.requests[1].last_user_text.startswith("Command output:\nhello from scripts\n")
        # The second run finds the copy complete and sends nothing.
        proc = run_cli(args, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        again = next(e for e in events(proc.stdout) if e["type"] == "skill_folder")
        assert again["how"] == "reused" and again["base"] == str(copy)
        assert json.dumps(sorted(p.name for p in copy.parent.iterdir())) == json.dumps([copy.name])
    finally:
        sshd.clean_remote()


@pytest.mark.parametrize("shell", ["dash", "bash"])
@pytest.mark.parametrize("case", ["sent", "reused", "no tar", "tar fails"])
def test_the_untar_script_reads_all_its_input_whatever_way_it_ends(
    tmp_path: Path, shell: str, case: str
) -> None:
    """Over a command channel, input left unread when the command exits closes the channel
    while kosmos still sends ("Channel not open for sending"): the script, under the real
    shells, reads all of it first. A pipe's writer sees the same as an EPIPE."""
    shell_path = need(shell, shell)
    home = tmp_path / "home"
    home.mkdir()
    dest = ".cache/kosmos/skills/probe-1"
    files = [("references/notes.md", b"# Notes\n", False, None)]
    data = tar_of(files)
    path = os.environ["PATH"]
    if case == "reused":
        (home / dest).mkdir(parents=True)
    elif case == "no tar":
        # sh and cat, and no tar on the PATH.
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for tool in ("cat", "mkdir"):
            (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
        path = str(bin_dir)
    elif case == "tar fails":
        data = b"not a tar\n" * 100
    # Far more than a pipe holds (64 KiB): a writer whose reader has gone gets EPIPE.
    data += b"\0" * (1024 * 1024)
    with subprocess.Popen(
        [shell_path, "-c", _UNTAR, "kosmos", dest, "abcd1234"],
        cwd=home,
        env={"PATH": path},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        unread = False
        view = memoryview(data)
        try:
            while view:
                view = view[proc.stdin.write(view) or 0 :]
        except BrokenPipeError:
            unread = True
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
    assert not unread, f"the script exited with input unread ({err!r})"
    expected = {"sent": 0, "reused": 0, "no tar": 97, "tar fails": 98}[case]
    assert proc.returncode == expected, err
    if case in ("sent", "reused"):
        assert out.decode().split() == [str(home / dest), case]
    if case == "sent":
        assert (home / dest / "references/notes.md").read_bytes() == b"# Notes\n"
