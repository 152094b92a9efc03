"""A command's environment holds no key kosmos knows: not locally, not forwarded over SSH."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kosmos.hosts.environment import command_env, forwarded
from kosmos.transcript import read_transcript
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home

KEY = "sk-kosmos0key0for0the0test0123456789"
GEMINI_KEY = "AIzaGeminiKeyFromTheConfigFile0000000001"
TOOL_TOKEN = "tool-secret-value-4242"
# Every way the command could get at them: by name, another *_API_KEY, the config's keys
# under another name, and the whole environment.
PROBE = (
    "[CMD] printenv KOSMOS_API_KEY | rev; printenv OPENAI_API_KEY | rev; "
    "printenv ANTHROPIC_API_KEY | rev; env | rev | grep -c -e "
    f"{KEY[::-1][:12]} -e {GEMINI_KEY[::-1][:12]} -e {TOOL_TOKEN[::-1][:12]}; "
    "echo plain=$KOSMOS_PLAIN"
)


def _config(tmp_path: Path) -> None:
    (tmp_path / "kosmos.yaml").write_text(
        yaml.safe_dump(
            {
                "providers": {"gemini": {"api_key": GEMINI_KEY}},
                "chat": {
                    "tools": [
                        {
                            "name": "search",
                            "description": "search",
                            "base_url": "http://127.0.0.1:1",
                            "path": "/q",
                            "body": {"api_token": TOOL_TOKEN},
                        }
                    ]
                },
            }
        )
    )


def _env(cli_env: dict) -> dict:
    return {
        **cli_env,
        "KOSMOS_API_KEY": KEY,
        "OPENAI_API_KEY": KEY,
        "ANTHROPIC_API_KEY": "sk-ant-another0vendor0key0000000",
        "MY_COPY": GEMINI_KEY,  # a key of the config under a name kosmos does not know
        "TOOL_SECRET": TOOL_TOKEN,
        "KOSMOS_PLAIN": "hello",
    }


def _told(llm: ScriptedLLM) -> str:
    return llm.requests[1].last_user_text


def test_a_local_command_sees_none_of_kosmoss_keys(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    _config(tmp_path)
    llm.script(PROBE, "[DONE] ok")
    done = run_cli(
        ["run", "system-overview", "--non-interactive", "--yes"], env=_env(cli_env), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    told = _told(llm)
    # Nothing printed for the keys (rev of nothing is nothing), no line of env holds one,
    # and an ordinary variable still reaches the command.
    assert told.split("\n", 1)[1].split()[:2] == ["0", "plain=hello"], told
    # The key did reach the LLM server as the Authorization header: it is the run's key.
    assert llm.requests[0].headers.get("authorization") == f"Bearer {KEY}"


def test_sendenv_forwards_nothing_of_kosmoss_keys_over_ssh(
    llm: ScriptedLLM, cli_env: dict, home: Path, tmp_path: Path, bare_sshd: Sshd
) -> None:
    # A client config that forwards every variable, to a server that accepts every one.
    write_client_home(home, bare_sshd, extra_config="  SendEnv *\n")
    env = _env(cli_env)
    env.pop("SSH_AUTH_SOCK", None)
    _config(tmp_path)
    llm.script(PROBE, "[DONE] ok")
    try:
        done = run_cli(
            ["run", "system-overview", "--host", "box", "--non-interactive", "--yes"],
            env=env,
            cwd=tmp_path,
        )
    finally:
        bare_sshd.clean_remote()
    assert done.returncode == 0, done.stderr
    told = _told(llm)
    # KOSMOS_PLAIN made it over: SendEnv works, only the keys were held back.
    assert told.split("\n", 1)[1].split()[:2] == ["0", "plain=hello"], told
    transcript = next((home / ".local/state/kosmos/runs").glob("*.jsonl"))
    assert KEY not in transcript.read_text() and KEY[::-1] not in transcript.read_text()
    assert [e.type for e in read_transcript(transcript)][-1] == "result"


def test_the_filter_by_name_and_by_value() -> None:
    env = {
        "PATH": "/usr/bin",
        "KOSMOS_API_KEY": "a",
        "gemini_api_key": "b",
        "X_API_KEY": "c",
        "COPY": " secret-value ",
        "LANG": "C.UTF-8",
        "KOSMOS_MCP_TOKEN": "the-mcp-servers-bearer-token",
    }
    assert command_env(env, ["secret-value"]) == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}
    assert forwarded(["LANG", "LC_*", "*KEY*", "COPY"], env, ["secret-value"]) == ["LANG"]
    assert json.dumps(forwarded(["*"], {"A*B": "x", "A": "y"})) == '["A"]'


def test_forwarded_picks_what_fnmatch_picks() -> None:
    # fnmatch.fnmatchcase, one pattern at a time, is the oracle for SendEnv's patterns.
    import fnmatch

    env = {
        name: "v"
        for name in ("LANG", "LC_ALL", "LC_TIME", "lc_all", "LANGUAGE", "XLANG", "A.B", "A", "AB")
        + ("TERM", "TERM_PROGRAM", "X[1]", "PATH", "MY_VAR", "MY-VAR", "Ä_VAR", "LC_\n")
    }
    for patterns in (
        ["LANG", "LC_*"],
        ["*"],
        ["A?"],
        ["[AL]*", "!X"],
        ["TERM*", "MY_*", "Ä*"],
        ["A.B"],
        ["LC_[!T]*"],
        [],
    ):
        expected = [
            n
            for n in env
            if not any(c in n for c in "*?[") and any(fnmatch.fnmatchcase(n, p) for p in patterns)
        ]
        assert forwarded(patterns, env) == expected, patterns
