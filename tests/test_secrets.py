"""Canary secrets: planted in output, environment, knowledge, files and errors, found nowhere.

Each canary is checked in everything kosmos writes or sends: stdout and stderr (line mode,
headless text and --json), the transcript file, and the body of every request the scripted
LLM server recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kosmos.engine.guard import LineRedactor
from kosmos.events import CommandOutput
from kosmos.hosts.local import LocalRunner
from kosmos.safety import Redactor
from tests.conftest import run_cli
from tests.helpers import run_session
from tests.llmserver import ScriptedLLM

ENV_TOKEN = "canary-env-5f1e2d3c9b"
API_KEY = "sk-canary-api-7a6b5c4d3e2f1a0b"
KNOWLEDGE_PW = "canary-knowledge-pw-42"
URL_PW = "canary-url-pw-0451"
AWS_KEY = "AKIACANARY1234567890"
BEARER = "canaryBearer0123456789abcdef"
KEY_BODY = "MIIEcanaryKEYbodyLINE0123456789abcdefABCDEF"
CANARIES = [ENV_TOKEN, API_KEY, KNOWLEDGE_PW, URL_PW, AWS_KEY, BEARER, KEY_BODY]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    (path / ".kosmos-panel").mkdir()
    (path / ".kosmos-panel/ai_system_promt.md").write_text(
        f"Database: postgres\ndb_password={KNOWLEDGE_PW}\n"
    )
    (path / "id_rsa").write_text(
        f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n"
    )
    (path / "app.env").write_text(
        f"AWS_ACCESS_KEY_ID={AWS_KEY}\n"
        f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com\n"
        f"DATABASE_URL=postgres://app:{URL_PW}@db:5432/app\n"
    )
    return path


SCRIPT = [
    "[CMD] echo token is $DEPLOY_TOKEN",
    "[CMD] cat id_rsa",
    "[CMD] cat app.env",
    f"[CMD] echo {API_KEY}",
    "[DONE] checked",
]


def _assert_nowhere(proc, llm: ScriptedLLM, home: Path, project: Path) -> None:
    transcripts = [p.read_text() for p in project.glob("*.jsonl")]
    transcripts += [p.read_text() for p in (home / ".local/state/kosmos/runs").glob("*.jsonl")]
    assert transcripts
    bodies = json.dumps([r.body for r in llm.requests])
    for canary in CANARIES:
        assert canary not in proc.stdout, canary
        assert canary not in proc.stderr, canary
        assert canary not in bodies, canary
        for text in transcripts:
            assert canary not in text, canary


@pytest.mark.parametrize(
    "mode",
    [
        ["--non-interactive", "--yes", "--json"],
        ["--non-interactive", "--yes"],
        ["--yes"],  # line mode: the screen renderer
    ],
)
def test_canaries_appear_nowhere(
    llm: ScriptedLLM, cli_env: dict, project: Path, home: Path, mode: list[str]
) -> None:
    llm.script(*SCRIPT)
    env = {**cli_env, "DEPLOY_TOKEN": ENV_TOKEN, "KOSMOS_API_KEY": API_KEY}
    proc = run_cli(
        ["run", "probe", *mode, "--transcript", str(project / "t.jsonl")], env=env, cwd=project
    )
    assert proc.returncode == 0, proc.stderr
    # The run really saw them: each masked value is where the canary was.
    assert llm.requests[1].last_user_text.startswith("Command output:\ntoken is [REDACTED]")
    assert "-----BEGIN RSA PRIVATE KEY-----[REDACTED]" in llm.requests[2].last_user_text
    third = llm.requests[3].last_user_text
    assert "AKIA[REDACTED]" in third and "Bearer [REDACTED]" in third
    assert "postgres://app:[REDACTED]@db" in third
    assert "db_password=[REDACTED]" in llm.requests[0].system
    assert llm.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    _assert_nowhere(proc, llm, home, project)


def test_canary_in_an_error_message(cli_env: dict, project: Path, home: Path) -> None:
    env = {**cli_env, "AI_KOSMOS_MODEL_BASE_URL": f"http://kosmos:{URL_PW}@127.0.0.1:9/v1"}
    for mode in (["--json"], []):
        proc = run_cli(["run", "probe", "--non-interactive", *mode], env=env, cwd=project)
        assert proc.returncode == 5, proc.stderr
        assert "connection refused" in proc.stderr
        assert URL_PW not in proc.stdout + proc.stderr
    for path in (home / ".local/state/kosmos/runs").glob("*.jsonl"):
        assert URL_PW not in path.read_text()


def test_streamed_output_is_redacted_across_chunk_boundaries() -> None:
    lines = LineRedactor(Redactor([ENV_TOKEN]))
    shown = lines.feed(f"token={ENV_TOKEN[:5]}") + lines.feed(f"{ENV_TOKEN[5:]}\nnext")
    shown += lines.flush()
    assert ENV_TOKEN not in shown and shown == "token=[REDACTED]\nnext"


async def test_a_key_printed_in_pieces_is_masked_live_and_in_the_transcript(
    llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The screen gets the key in three reads, apart in time; no line of its body shows."""
    body = [f"{KEY_BODY}{n}" for n in range(6)]
    key = ["-----BEGIN OPENSSH PRIVATE KEY-----", *body, "-----END OPENSSH PRIVATE KEY-----"]
    (tmp_path / "id_ed25519").write_text("\n".join(key) + "\n")
    command = (
        "head -n 3 id_ed25519; sleep 0.3; sed -n 4,5p id_ed25519; sleep 0.3; "
        "tail -n +6 id_ed25519; echo done"
    )
    llm.script(f"[CMD] {command}", "[DONE] read")
    path = tmp_path / "run.jsonl"
    run = await run_session(
        llm.base_url,
        runner=LocalRunner(cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}),
        transcript=path,
    )
    assert run.result.status == "done", run.result.message
    pieces = [e.text for e in run.of(CommandOutput)]
    # The BEGIN line was shown on its own, while the rest of the key was still to come.
    assert len(pieces) >= 2, pieces
    assert pieces[0] == "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]"
    screen = "".join(pieces)
    transcript = path.read_text()
    bodies = json.dumps([r.body for r in llm.requests])
    for line in body:
        assert line not in screen, (line, pieces)
        assert line not in transcript, line
        assert line not in bodies, line
    assert screen == (
        "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----\ndone\n"
    )


@pytest.mark.parametrize("policy", ["read-only", "locked"])
def test_a_read_of_every_processs_environment_is_refused_headless(
    llm: ScriptedLLM, cli_env: dict, project: Path, policy: str
) -> None:
    """The kernel shows a process's first environment to every process of its user, in
    /proc/PID/environ: the key kosmos was started with sits in its parent's (`timeout`, a CI
    step, `sudo`). Such a read is secret material, asked and so refused headless; nothing
    of the key reaches the LLM, even reversed."""
    llm.script(
        "[CMD] grep -a -h -o 'KOSMOS_API_KEY=[^[:cntrl:]]*' /proc/[0-9]*/environ | rev",
        "[DONE] read",
    )
    env = {**cli_env, "KOSMOS_API_KEY": API_KEY}
    transcript = project / "t.jsonl"
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--policy", policy, "--transcript", str(transcript)],
        env=env,
        cwd=project,
    )
    assert proc.returncode == 4, proc.stderr  # needs input: a person's yes
    assert "reads secret material" in proc.stderr
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert not [e for e in events if e["type"] == "command_started"]
    assert "reads secret material (/proc/[0-9]*/environ)" in llm.requests[1].last_user_text
    bodies = json.dumps([r.body for r in llm.requests])
    assert API_KEY[::-1] not in bodies and API_KEY not in bodies
