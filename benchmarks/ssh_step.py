"""A kosmos step over SSH against bare asyncssh and OpenSSH's ssh with ControlMaster.

Starts Debian's sshd on loopback (as the tests do; needs root), then, in the same run and on
the same command:
- bare asyncssh: `conn.run()` on one reused connection;
- ssh with ControlMaster: one `ssh` process per command over a shared master connection;
- the kosmos SSH runner alone (`SSHRunner.run`, one reused connection);
  (these three interleaved, so that load from elsewhere on the machine hits all alike)
- a kosmos step: a scripted LLM on loopback answers at once with `[CMD] <command>`; the step is
  one LLM request to the next (LLM round trip + command + kosmos's own work);
and the time to the first byte of streamed output of `echo first; sleep 0.3`. During the kosmos
steps, each approval times a bare asyncssh `conn.run()` of the same command: a reference taken
at the same moment as each step (and left out of the step time).

    python benchmarks/ssh_step.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncssh  # noqa: E402

from kosmos.config import Settings  # noqa: E402
from kosmos.engine.operator import Approval, CommandProposal  # noqa: E402
from kosmos.engine.session import Session, SessionOptions  # noqa: E402
from kosmos.events import CommandFinished, CommandStarted, Event, LLMReply, LLMRequest  # noqa: E402
from kosmos.hosts.ssh import SSHRunner  # noqa: E402
from kosmos.hosts.target import parse_target  # noqa: E402
from kosmos.llm.factory import make_provider  # noqa: E402
from kosmos.prompts import Prompts  # noqa: E402
from tests.helpers import ScriptOperator, make_skill  # noqa: E402
from tests.llmserver import ScriptedLLM  # noqa: E402
from tests.sshd import Sshd, start_sshd, write_client_home  # noqa: E402

COMMAND = "echo ok"
STREAM = "echo first; sleep 0.3"


def openssh_base(home: Path) -> list[str]:
    return [
        "ssh", "-F", str(home / ".ssh" / "config"), "-i", str(home / ".ssh" / "id_ed25519"),
        "-o", "UserKnownHostsFile=" + str(home / ".ssh" / "known_hosts"),
        "-o", "ControlMaster=auto", "-o", f"ControlPath={home / 'cm-%C'}",
        "-o", "ControlPersist=60", "-o", "BatchMode=yes", "box",
    ]  # fmt: skip


async def commands(sshd: Sshd, home: Path, n: int) -> dict[str, list[float]]:
    """The three ways to run one command, interleaved so that load on the machine hits all alike."""
    base = openssh_base(home)
    subprocess.run([*base, "true"], check=True, stdin=subprocess.DEVNULL)  # start the master
    runner = SSHRunner(parse_target("box"), connect_timeout=10)
    await runner.connect()
    times: dict[str, list[float]] = {k: [] for k in ("asyncssh", "ssh", "kosmos")}
    first: dict[str, list[float]] = {k: [] for k in ("asyncssh", "ssh", "kosmos")}
    async with asyncssh.connect(
        "127.0.0.1",
        sshd.port,
        username=sshd.user,
        client_keys=[str(sshd.client_key)],
        known_hosts=None,
    ) as conn:
        for i in range(n):
            t = time.perf_counter()
            await conn.run(COMMAND)
            times["asyncssh"].append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run(
                [*base, COMMAND], check=True, stdin=subprocess.DEVNULL, capture_output=True
            )
            times["ssh"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await runner.run(COMMAND, timeout=30)
            times["kosmos"].append(time.perf_counter() - t)
            if i % 10:
                continue
            # Time to the first byte of streamed output.
            t = time.perf_counter()
            proc = await conn.create_process(STREAM)
            await proc.stdout.read(1)
            first["asyncssh"].append(time.perf_counter() - t)
            await proc.wait()
            t = time.perf_counter()
            popen = subprocess.Popen(
                [*base, STREAM], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
            )
            assert popen.stdout is not None
            popen.stdout.read(1)
            first["ssh"].append(time.perf_counter() - t)
            popen.communicate()
            seen: list[float] = []
            t = time.perf_counter()
            await runner.run(
                STREAM,
                timeout=30,
                on_output=lambda _, seen=seen: seen or seen.append(time.perf_counter()),
            )
            first["kosmos"].append(seen[0] - t)
    await runner.close()
    subprocess.run([*base[:-1], "-O", "exit", "box"], capture_output=True, check=False)
    return {**times, **{f"first {k}": v for k, v in first.items()}}


class TimingOperator(ScriptOperator):
    """Approves every command, first timing a bare asyncssh `conn.run()` of it: a reference
    measured at the same moment as each kosmos step (the approval's time is taken out)."""

    def __init__(self, conn: asyncssh.SSHClientConnection) -> None:
        super().__init__()
        self.conn = conn
        self.bare: list[float] = []
        self.spent: list[float] = []

    async def approve(self, proposal: CommandProposal) -> Approval:
        t = time.perf_counter()
        await self.conn.run(proposal.command)
        self.bare.append(time.perf_counter() - t)
        approval = await super().approve(proposal)
        self.spent.append(time.perf_counter() - t)
        return approval


async def kosmos_steps(sshd: Sshd, n: int, llm: ScriptedLLM) -> dict[str, list[float]]:
    llm.script(*[f"[CMD] {COMMAND}"] * n, "[DONE] ok")
    marks: list[tuple[str, float]] = []

    def emit(event: Event) -> None:
        if isinstance(event, LLMRequest | LLMReply | CommandStarted | CommandFinished):
            marks.append((event.type, time.perf_counter()))

    runner = SSHRunner(parse_target("box"), connect_timeout=10)
    await runner.connect()
    provider = make_provider(Settings(base_url=llm.base_url))
    async with asyncssh.connect(
        "127.0.0.1",
        sshd.port,
        username=sshd.user,
        client_keys=[str(sshd.client_key)],
        known_hosts=None,
    ) as conn:
        operator = TimingOperator(conn)
        session = Session(
            make_skill(),
            params={},
            runner=runner,
            provider=provider,
            operator=operator,
            prompts=Prompts.load(),
            emit=emit,
            options=SessionOptions(max_steps=n + 5, history_mode="last_n", history_max=10),
        )
        await session.run()
    await provider.aclose()
    await runner.close()
    requests = [t for kind, t in marks if kind == "llm_request"]
    replies = [t for kind, t in marks if kind == "llm_reply"]
    starts = [t for kind, t in marks if kind == "command_started"]
    ends = [t for kind, t in marks if kind == "command_finished"]
    step = [
        b - a - spent for a, b, spent in zip(requests, requests[1:], operator.spent, strict=False)
    ]
    llm_rt = [b - a for a, b in zip(requests, replies, strict=False)][: len(step)]
    cmd = [b - a for a, b in zip(starts, ends, strict=False)][: len(step)]
    return {"step": step, "llm": llm_rt, "command": cmd, "bare": operator.bare[: len(step)]}


def med(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    n = args.steps
    sshd = start_sshd("bench")
    llm = ScriptedLLM().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            write_client_home(home, sshd)
            os.environ["HOME"] = str(home)  # asyncssh reads ~/.ssh from HOME
            os.environ.pop("SSH_AUTH_SOCK", None)
            measured = asyncio.run(commands(sshd, home, n))
            steps = asyncio.run(kosmos_steps(sshd, n, llm))
    finally:
        llm.stop()
        sshd.stop()
        shutil.rmtree(sshd.root, ignore_errors=True)
    bare, ssh = measured["asyncssh"], measured["ssh"]
    ref = med(bare)
    print(f"command `{COMMAND}` over loopback OpenSSH, {n} runs each, medians in ms")
    print(f"{'what':40} {'ms':>8}  {'vs asyncssh':>11}  {'vs ssh -M':>9}")
    rows = [
        ("bare asyncssh conn.run()", med(bare)),
        ("ssh with ControlMaster", med(ssh)),
        ("kosmos SSHRunner.run()", med(measured["kosmos"])),
    ]
    for name, value in rows:
        print(f"{name:40} {value:8.2f}  {value / ref:10.2f}x  {value / med(ssh):8.2f}x")
    step_ref = med(steps["bare"])
    own = med(steps["step"]) - med(steps["llm"]) - med(steps["command"])
    print(
        f"\nkosmos steps (scripted LLM answering at once), {len(steps['step'])} steps, "
        "medians in ms"
    )
    print(f"{'what':40} {'ms':>8}  {'vs asyncssh':>11}")
    for name, value in (
        ("bare asyncssh conn.run(), each step", step_ref),
        ("kosmos step (LLM + command + own)", med(steps["step"])),
        ("  of which LLM round trip", med(steps["llm"])),
        ("  of which command", med(steps["command"])),
        ("  of which kosmos itself", own),
        ("kosmos step without the LLM", med(steps["step"]) - med(steps["llm"])),
    ):
        print(f"{name:40} {value:8.2f}  {value / step_ref:10.2f}x")
    print(f"\ntime to first byte of `{STREAM}`, medians in ms")
    for name, key in (
        ("bare asyncssh", "first asyncssh"),
        ("ssh with ControlMaster", "first ssh"),
        ("kosmos SSHRunner (on_output)", "first kosmos"),
    ):
        print(f"{name:40} {med(measured[key]):8.2f}")


if __name__ == "__main__":
    main()
