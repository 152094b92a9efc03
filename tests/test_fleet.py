"""The fleet core in-process: fan-out, failures, forks and LLM bounds, approve-once, canary."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest

from kosmos.engine.operator import Approval, CommandProposal, Question
from kosmos.engine.session import SessionOptions
from kosmos.errors import HostError, KosmosError, UsageError
from kosmos.events import Answer, CommandDecision, CommandFinished, Notice, RunFinished, RunStarted
from kosmos.fleet.approvals import (
    AnswerRequest,
    ApprovalBroker,
    ApprovalRequest,
    FleetAnswer,
    FleetApproval,
)
from kosmos.fleet.results import fleet_exit_code
from kosmos.fleet.targets import HostSpec
from kosmos.hosts.local import LocalRunner
from kosmos.hosts.runner import Runner
from tests.fleethelpers import THREE, Hosts, host_dirs, host_of, run_fleet, scripted, steps_of
from tests.helpers import ScriptOperator
from tests.llmserver import Recorded, ScriptedLLM

NAMES = [f"web{i:02d}" for i in range(1, 21)]


class Unreachable(LocalRunner):
    """A host that refuses the connection, as a dead server would."""

    async def connect(self) -> None:
        raise HostError("connection refused; check that sshd runs there")


class Counting(LocalRunner):
    """Counts connections open at once, as a server sees them."""

    open = 0
    peak = 0

    async def connect(self) -> None:
        Counting.open += 1
        Counting.peak = max(Counting.peak, Counting.open)

    async def close(self) -> None:
        Counting.open -= 1


class SlowToConnect(LocalRunner):
    """A host whose connection takes a while, as one across the world does: here until
    another host's run has ended (`until`); `took` says how long it took."""

    def __init__(self, until: asyncio.Event, cwd: Path) -> None:
        super().__init__(cwd=cwd)
        self.until = until
        self.took = 0.0

    async def connect(self) -> None:
        started = time.monotonic()
        await asyncio.wait_for(self.until.wait(), 30)
        self.took = time.monotonic() - started


class SaysClosed(LocalRunner):
    """A host that says when the fleet is done with it (its runner closed)."""

    def __init__(self, closed: asyncio.Event, cwd: Path) -> None:
        super().__init__(cwd=cwd)
        self.closed = closed

    async def close(self) -> None:
        await super().close()
        self.closed.set()


async def test_a_hosts_duration_counts_its_connection_in_its_result_as_in_the_summary(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.default = scripted()
    names = ["near", "far"]
    root = host_dirs(tmp_path, names)
    near_done = asyncio.Event()
    far = SlowToConnect(near_done, cwd=root / "far")
    hosts = {"near": lambda spec: SaysClosed(near_done, cwd=root / "near"), "far": lambda _: far}
    run = await run_fleet(llm.base_url, names, open_runner=Hosts(root, hosts))
    assert run.result.counts == {"done": 2}
    for name in names:
        [finished] = run.of(name, RunFinished)
        # The same figure in the host's result (its transcript, its card in the TUI) as in its
        # row of the fleet's summary (the table, fleet.json): the connection counted in both.
        assert finished.duration_s == pytest.approx(run.host(name).duration_s, abs=0.0006)
    # far connected once near's whole run had ended: its connection is in its figure, and
    # none of it in near's.
    assert run.host("far").duration_s >= far.took
    assert run.host("near").duration_s < run.host("far").duration_s


async def test_fan_out_over_20_hosts_tags_every_event(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.default = scripted()
    hosts = Hosts(host_dirs(tmp_path, NAMES))
    run = await run_fleet(llm.base_url, NAMES, open_runner=hosts)
    assert run.result.exit_code == 0
    assert run.result.counts == {"done": 20}
    assert all(e.host in NAMES for e in run.events if not hasattr(e, "hosts"))
    for name in NAMES:
        started = run.of(name, RunStarted)
        assert len(started) == 1
        pwd = [e for e in run.of(name, CommandFinished) if e.command == "pwd"]
        assert pwd[0].output.strip() == str(tmp_path / name)
        assert run.host(name).steps == 4 and run.host(name).last_exit_code == 0
    # Each host had its own conversation: 4 requests, each with its own knowledge.
    per_host: dict[str, int] = {}
    for r in llm.requests:
        per_host[host_of(r)] = per_host.get(host_of(r), 0) + 1
    assert per_host == dict.fromkeys(NAMES, 4)


async def test_unreachable_and_failing_hosts_do_not_stop_the_others(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    names = ["a", "b", "dead", "bad"]
    llm.default = scripted(per_host={"bad": ["no tag here"] * 5})
    hosts = Hosts(host_dirs(tmp_path, names, codes={"b": 3}), {"dead": lambda s: Unreachable()})
    run = await run_fleet(llm.base_url, names, open_runner=hosts)
    assert run.host("a").status == "done"
    # b's command failed (exit 3) but the skill went on to [DONE].
    assert run.host("b").status == "done" and run.host("b").last_exit_code == 0
    assert run.host("dead").status == "unreachable" and run.host("dead").exit_code == 6
    assert "connection refused" in run.host("dead").message
    assert run.host("bad").status == "failed" and run.host("bad").exit_code == 1
    assert run.result.exit_code == 6
    assert "2 of 4 hosts done" in run.result.message and "unreachable (dead)" in run.result.message
    results = [e for e in run.events if isinstance(e, RunFinished)]
    assert sorted(e.host for e in results) == sorted(names)


def test_exit_code_priority() -> None:
    assert fleet_exit_code([0, 0]) == 0
    assert fleet_exit_code([0, 3, 4, 1]) == 1
    assert fleet_exit_code([3, 4]) == 4
    assert fleet_exit_code([1, 5, 6]) == 6
    assert fleet_exit_code([1, 5]) == 5
    assert fleet_exit_code([0, 3]) == 3
    assert fleet_exit_code([6, 130]) == 130


async def test_forks_bound_connections(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.default = scripted(["[CMD] sleep 0.05", "[DONE] ok"])
    names = NAMES[:12]
    root = host_dirs(tmp_path, names)
    Counting.open = Counting.peak = 0
    hosts = Hosts(root, {n: lambda s: Counting(cwd=root / s.name) for n in names})
    run = await run_fleet(llm.base_url, names, open_runner=hosts, forks=3)
    assert run.result.exit_code == 0
    assert Counting.peak == 3 and Counting.open == 0


async def test_llm_concurrency_bounds_requests_in_flight(llm: ScriptedLLM, tmp_path: Path) -> None:
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    inner = scripted(["[DONE] ok"])

    def reply(record: Recorded) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)  # a reply that takes a while: the requests in flight overlap
        with lock:
            state["now"] -= 1
        return inner(record)

    llm.default = reply
    names = NAMES[:8]
    run = await run_fleet(
        llm.base_url, names, open_runner=Hosts(host_dirs(tmp_path, names)), llm_concurrency=2
    )
    assert run.result.exit_code == 0
    assert state["peak"] == 2


async def test_a_host_that_cannot_be_opened_is_reported(llm: ScriptedLLM, tmp_path: Path) -> None:
    llm.default = scripted()

    def refuse(spec: HostSpec) -> Runner:
        raise UsageError(f"--host {spec.target}: not a valid target")

    hosts = Hosts(host_dirs(tmp_path, ["a"]), {"odd": refuse})
    run = await run_fleet(llm.base_url, ["a", "odd"], open_runner=hosts)
    assert run.host("odd").status == "error" and run.host("odd").exit_code == 2
    assert run.result.exit_code == 2


# -- approve once -------------------------------------------------------------------------


class Desk:
    """A scripted operator at the fleet's desk: decisions in order, everything recorded."""

    def __init__(self, decisions: list[FleetApproval]) -> None:
        self.decisions = decisions
        self.requests: list[ApprovalRequest] = []
        self.questions: list[tuple[str, Question]] = []

    async def decide(self, request: ApprovalRequest) -> FleetApproval:
        self.requests.append(request)
        # A person reading, on purpose: the other hosts meanwhile propose the same command
        # and wait in its group. Nothing asserted hangs on it: a host that comes after the
        # decision gets the same standing approval.
        await asyncio.sleep(0.2)
        return self.decisions.pop(0) if self.decisions else FleetApproval(Approval.skip())

    async def answer(self, request: AnswerRequest) -> FleetAnswer:
        self.questions.append((request.host, request.question))
        return FleetAnswer(f"answer for {request.host}")

    async def ask_secret(self, host: str, prompt: str) -> str | None:
        return None

    async def retry(self, host: str, error: KosmosError) -> bool:
        return False


async def test_approve_once_for_all_hosts(llm: ScriptedLLM, tmp_path: Path) -> None:
    names = NAMES[:6]
    llm.default = scripted(["[CMD] uname -s", "[CMD] echo second", "[DONE] ok"])
    desk = Desk([FleetApproval(Approval.run(), "all"), FleetApproval(Approval.run(), "all")])
    broker = ApprovalBroker(desk)
    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(host_dirs(tmp_path, names)),
        make_operator=lambda spec: broker.desk_for(spec.name),
    )
    assert run.result.exit_code == 0
    # Two commands, six hosts: the operator was asked twice.
    assert [r.proposal.command for r in desk.requests] == ["uname -s", "echo second"]
    for name in names:
        assert [e.command for e in run.of(name, CommandFinished)] == ["uname -s", "echo second"]
    # The host shown to the operator was asked; on the others the approval stood for them.
    for request in desk.requests:
        shown = request.proposal.host
        decided = {
            e.host: (e.by, e.asked)
            for e in run.events
            if isinstance(e, CommandDecision) and e.command == request.proposal.command
        }
        assert decided.pop(shown) == ("operator", True)
        assert set(decided.values()) == {("standing", False)} and len(decided) == len(names) - 1


async def test_dangerous_commands_are_asked_per_host(llm: ScriptedLLM, tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    llm.default = scripted(["[CMD] mkfs.ext4 /dev/kosmos-test-none", "[DONE] ok"])
    # "all" is not taken for a dangerous command: b and c are asked on their own.
    desk = Desk([FleetApproval(Approval.skip(), "all")] * 3)
    broker = ApprovalBroker(desk)
    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(host_dirs(tmp_path, names)),
        make_operator=lambda spec: broker.desk_for(spec.name),
        # A person sits at the desk: headless, the engine refuses dangerous commands unasked.
        options=SessionOptions(policy="auto"),
    )
    assert len(desk.requests) == 3
    assert all(r.dangerous and r.hosts == (r.proposal.host,) for r in desk.requests)
    assert sorted(r.proposal.host for r in desk.requests) == names
    assert not [e for e in run.events if isinstance(e, CommandFinished)]
    # Headless, the policy refuses it on every host without asking anyone.
    desk.requests.clear()
    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(host_dirs(tmp_path / "headless", names)),
        make_operator=lambda spec: broker.desk_for(spec.name),
        options=SessionOptions(policy="auto", non_interactive=True),
    )
    assert desk.requests == []
    decisions = [e for e in run.events if isinstance(e, CommandDecision)]
    assert sorted(e.host for e in decisions) == names
    assert {e.decision for e in decisions} == {"refused"}


async def test_broker_standing_approval_covers_late_hosts() -> None:
    desk = Desk([FleetApproval(Approval.run(), "all")])
    broker = ApprovalBroker(desk)
    first = await broker.approve(CommandProposal(step=1, command="uptime", host="a"))
    late = await broker.approve(CommandProposal(step=1, command="uptime", host="b"))
    other = await broker.approve(CommandProposal(step=1, command="df -h", host="b"))
    assert (first.action, late.action, other.action) == ("run", "run", "skip")
    assert (first.by, late.by) == ("operator", "standing")
    assert len(desk.requests) == 2


# -- canary -------------------------------------------------------------------------------


async def test_canary_replays_without_the_llm_and_a_diverging_host_gets_its_own(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    names = ["canary", "b", "c", "odd", "e"]
    llm.default = scripted(
        ["[CMD] echo one", "[ASK] Which port?", "[CMD] cat code; exit $(cat code)", "[DONE] fine"],
        per_host={"odd": ["-", "-", "-", "[CMD] echo recovering", "[DONE] odd fixed"]},
    )
    hosts = Hosts(host_dirs(tmp_path, names, codes={"odd": 2}))
    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=hosts,
        canary="canary",
        make_operator=lambda spec: ScriptOperator(answers=[f"{spec.name}-port"]),
    )
    assert run.result.exit_code == 0, run.result
    assert sum(1 for r in llm.requests if host_of(r) == "canary") == 4
    # The others replayed the canary's plan; each knowledge file names its host, so no
    # conversation is the canary's and each asked the LLM once, for its own report only.
    for name in ("b", "c", "e"):
        (own,) = [r for r in llm.requests if host_of(r) == name]
        assert steps_of(own) == 4 and own.messages[-2]["content"].startswith("[CMD] cat code")
        assert run.host(name).report_from == "own"
    # odd followed the canary until its exit status differed, then asked the LLM itself,
    # which saw odd's own output and the canary's earlier replies.
    odd = [r for r in llm.requests if host_of(r) == "odd"]
    assert len(odd) == 2
    assert "[exit code: 2]" in odd[0].last_user_text
    assert odd[0].messages[2]["content"] == "[CMD] echo one"
    assert run.host("odd").mode == "diverged" and run.host("odd").diverged_at_step == 3
    assert run.host("odd").message == "odd fixed"
    notices = [e.message for e in run.of("odd", Notice)]
    assert any("exit 2 here and exit 0 on the canary canary" in m for m in notices)
    for name in ("b", "c", "e"):
        h = run.host(name)
        assert (h.status, h.mode, h.message) == ("done", "replay", "fine")
        # The canary's answer was replayed: this host's own operator was never asked.
        assert run.operators[name].questions == []
        cmds = [e.command for e in run.of(name, CommandFinished)]
        assert cmds == ["echo one", "cat code; exit $(cat code)"]
        assert [e.answer for e in run.of(name, Answer)] == ["canary-port"]
    assert run.host("canary").mode == "canary"


async def test_a_failed_canary_skips_the_others(llm: ScriptedLLM, tmp_path: Path) -> None:
    names = ["c1", "x", "y"]
    llm.default = scripted(["no tag"] * 3)
    run = await run_fleet(
        llm.base_url, names, open_runner=Hosts(host_dirs(tmp_path, names)), canary="c1"
    )
    assert run.host("c1").status == "failed"
    assert [run.host(n).status for n in ("x", "y")] == ["skipped", "skipped"]
    assert "canary c1 ended failed" in run.host("x").message
    assert run.result.exit_code == 1
    assert {host_of(r) for r in llm.requests} == {"c1"}


async def test_canary_must_be_one_of_the_hosts(llm: ScriptedLLM, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--canary zz: not one of this run's hosts"):
        await run_fleet(llm.base_url, ["a"], open_runner=Hosts(tmp_path), canary="zz")


def test_three_step_script_is_what_the_tests_assume() -> None:
    assert THREE[-1].startswith("[DONE]")


def test_journal_keeps_each_hosts_events_in_order(tmp_path: Path) -> None:
    from kosmos.events import CommandOutput, Notice
    from kosmos.fleet.journal import Journal
    from kosmos.transcript import read_transcript

    journal = Journal(tmp_path / "run")
    hosts = [f"h{i}" for i in range(5)] + ["odd/name"]
    for i in range(300):
        for host in hosts:
            journal.write(Notice(host=host, message=f"{host} {i}"))
    journal.write(CommandOutput(host="h0", step=1, text="live only"))
    journal.close()
    for host in hosts:
        events = read_transcript(journal.path(host))
        assert [e.message for e in events] == [f"{host} {i}" for i in range(300)]
    # A name that is not a safe file name gets a hash of itself: `odd name` is another file.
    assert re.fullmatch(r"odd_name-[0-9a-f]{12}\.jsonl", journal.path("odd/name").name)
    assert journal.path("odd name") != journal.path("odd/name")


@pytest.mark.parametrize("protocol", ["tools", "json"])
async def test_canary_replays_every_step_protocol(
    llm: ScriptedLLM, tmp_path: Path, protocol: str
) -> None:
    from tests.llmserver import call, calls

    steps = {
        "tools": [
            calls(call("run_command", id="c1", command="cat code; exit $(cat code)")),
            calls(call("finish", id="c2", summary="all good")),
        ],
        "json": [
            '{"action": "cmd", "text": "cat code; exit $(cat code)"}',
            '{"action": "done", "text": "all good"}',
        ],
    }[protocol]

    def reply(record: Recorded) -> object:
        answered = sum(1 for m in record.messages if m["role"] == "assistant")
        return steps[min(answered, len(steps) - 1)]

    llm.default = reply
    names = ["c", "r1", "r2", "odd"]
    run = await run_fleet(
        llm.base_url,
        names,
        open_runner=Hosts(host_dirs(tmp_path, names, codes={"odd": 1})),
        canary="c",
        options=SessionOptions(non_interactive=True, protocol=protocol),
    )
    assert run.result.exit_code == 0, run.result
    # r1 and r2 replay the plan; their knowledge files differ from c's, so each asks for its
    # own report (one request), as odd asks for the rest of its run.
    assert sorted(host_of(r) for r in llm.requests) == ["c", "c", "odd", "r1", "r2"]
    for name in ("r1", "r2"):
        h = run.host(name)
        assert (h.status, h.mode, h.message, h.last_exit_code) == ("done", "replay", "all good", 0)
    assert run.host("odd").mode == "diverged" and run.host("odd").last_exit_code == 1


async def test_broker_lists_waiting_groups_and_decides_from_outside() -> None:
    """What a TUI does: show the grouped proposals, then press "Run on all N"."""
    seen: list[ApprovalRequest] = []
    gate = asyncio.Event()

    class Slow(Desk):
        async def decide(self, request: ApprovalRequest) -> FleetApproval:
            seen.append(request)
            await gate.wait()
            return FleetApproval(Approval.skip())

    broker = ApprovalBroker(Slow([]))
    waiting: list[tuple[str, bool]] = []
    broker.on_waiting = lambda host, now: waiting.append((host, now))
    asks = [
        asyncio.ensure_future(broker.approve(CommandProposal(step=1, command=c, host=h)))
        for h, c in [("a", "uptime"), ("b", "uptime"), ("c", "df -h"), ("d", "uptime")]
    ]
    while not seen:
        await asyncio.sleep(0.01)
    groups = {g.proposal.command: g.hosts for g in broker.waiting}
    assert groups == {"uptime": ("a", "b", "d"), "df -h": ("c",)}
    assert broker.decide_all("uptime", Approval.run()) == 3
    gate.set()
    results = await asyncio.gather(*asks)
    assert [r.action for r in results] == ["run", "run", "skip", "run"]
    assert ("a", True) in waiting and ("a", False) in waiting
    await broker.aclose()


async def test_an_answer_for_all_hosts_is_given_once_to_each() -> None:
    class Once(Desk):
        async def answer(self, request: AnswerRequest) -> FleetAnswer:
            self.questions.append((request.host, request.question))
            return FleetAnswer(f"from {request.host}", "all")

    desk = Once([])
    broker = ApprovalBroker(desk)
    q = Question(step=2, text="Which port?", required=True)
    first = await asyncio.gather(*(broker.answer(h, q) for h in ("a", "b", "c")))
    assert first == ["from a"] * 3 and [h for h, _ in desk.questions] == ["a"]
    # The same question again later in a's run is a new question for a.
    assert await broker.answer("a", q) == "from a"
    assert [h for h, _ in desk.questions] == ["a", "a"]
    other = Question(step=3, text="Which user?", required=True)
    assert await broker.answer("b", other) == "from b"
