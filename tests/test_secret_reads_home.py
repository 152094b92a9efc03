"""Secrets stay home: a process's environment, kosmos's own settings, wp-config.php and the
secret-named variables are secret material, asked for under every policy but auto (so
refused headless), the kernel lock notwithstanding; checked by the policy and by real runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kosmos.safety import assess
from tests.conftest import run_cli
from tests.llmserver import ScriptedLLM
from tests.sshd import Sshd, write_client_home

SECRET_MATERIAL = [
    "cat /proc/*/environ",
    "cat /proc/self/environ",
    "cat /proc/$$/environ",
    "cat /proc/${PID}/environ",
    'cat "/proc/$p/environ"',
    "head -c 300 /proc/1/task/1/environ",
    "for p in /proc/[0-9]*; do cat $p/environ; done",
    "grep -a KEY /proc/$p/environ | rev",
    "grep -a -h -o 'KEY=[^[:cntrl:]]*' /proc/[0-9]*/environ | rev",
    "ls /proc | xargs -I{} cat /proc/{}/environ",
    "ls -d /proc/[0-9]* | xargs -I{} strings {}/environ",
    "strings /proc/1/environ",
    "tr '\\0' '\\n' < /proc/1/environ",
    "od -c /proc/self/environ",
    "xxd /proc/1/environ",
    "cd /proc/1 && cat environ",
    "find /proc -name environ -exec cat {} +",
    "sh -c 'cat /proc/$1/environ' _ 1",
    "rev kosmos.yaml",
    "cat ./kosmos.yaml",
    "cat ~/.config/kosmos/config.yaml",
    "tac /root/.config/kosmos/config.yaml",
    "cat $XDG_CONFIG_HOME/kosmos/config.yaml",
    "cat /srv/cfg/kosmos/config.yaml",
    "cat /etc/kosmos/config.yaml",
    "cat .kosmos/config.yaml",
    "grep -a api_key ~/.config/kosmos/*.yaml",
    "od -c /var/www/html/wp-config.php",
    "cat wp-config.php.bak",
    "grep -r DB_ /var/www",
    "cat ${d}/.env",
]

SECRET_VARIABLES = [
    "printenv AWS_SECRET_ACCESS_KEY",
    "printenv AWS_SECRET_ACCESS_KEY | sed 's/./& /g'",
    "printenv | grep SECRET",
    "env | grep -i token",
    "env | grep -i -e user -e pass",
    "set | grep PASSWORD",
    "export -p | grep -i apikey",
    "env | rev",
    "printenv | sort | cut -d= -f2",
    "env | grep -o '=.*'",
    "echo $AWS_SECRET_ACCESS_KEY",
    'echo "${DB_PASSWORD}"',
    "echo ${DB_PASSWORD:0:4}",
    'printf %s "$GITHUB_TOKEN" | rev',
    "echo $APP_KEY",
    "echo $ENCRYPTION_KEY | base64",
    "echo $OPENAI_APIKEY",
    "echo $MY_CREDENTIALS",
    "echo $ssh_private_key",
    "cat <<< $VAULT_TOKEN",
    "declare -p DB_PASSWD",
    "sh -c 'echo $API_KEY'",
    "ls; echo $X_SECRET",
    "kubectl get secret db -o yaml",
    "kubectl config view --raw",
    "nmcli -s connection show wifi",
]

NOT_SECRET = [
    "ls -l /proc/1/environ",
    "echo /proc/*/environ",
    "cat /proc/1/status",
    "cat /proc/$pid/cmdline",
    "cat $LOGFILE",
    'cat "$f"',
    "cat config.yaml",
    "cat /etc/kosmos/notes.txt",
    "cat wp-config-sample.php",
    "env",
    "printenv",
    "printenv HOME",
    "env | sort",
    "env | grep PATH",
    "printenv | grep -v SECRET",
    "echo $HOME $KEYBOARD",
    "echo ${#DB_PASSWORD}",
    "echo '$API_TOKEN'",
]


@pytest.mark.parametrize("command", SECRET_MATERIAL + SECRET_VARIABLES)
def test_reading_a_secret_is_asked_for_under_every_lock(command: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == "write", result.reason
    assert result.secret, result.reason
    assert any(w in result.reason for w in ("secret", "credentials", "without their names"))


@pytest.mark.parametrize("command", NOT_SECRET)
def test_names_metadata_and_other_variables_are_not_secret_reads(command: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == "read_only", result.reason


def test_a_plain_write_beside_a_secret_read_keeps_it_asked() -> None:
    result = assess("touch /tmp/x; cat /proc/1/environ", "bash")
    assert result.verdict == "write" and result.secret


def test_the_variables_named_as_secrets_do_print_their_values_in_a_real_shell(
    tmp_path: Path,
) -> None:
    """What the policy calls a read of a secret-named variable does print it (bash and dash)."""
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": "v4lue-of-the-secret", "APP_KEY": "v4lue-app"}
    for shell in ("bash", "dash"):
        for command in ("echo $AWS_SECRET_ACCESS_KEY", 'echo "${APP_KEY}"', "env | rev"):
            out = subprocess.run(
                [shell, "-c", command], env=env, capture_output=True, text=True, check=True
            ).stdout
            assert "v4lue" in out or "eul4v" in out, (shell, command)


KEY = "sk-proj-Home7Stays9Q2wErTyUiOpAsDfGhJk"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".kosmos/skills/probe").mkdir(parents=True)
    (path / ".kosmos/skills/probe/SKILL.md").write_text(
        "---\nname: probe\ndescription: look\n---\nLook around.\n"
    )
    (path / "wp-config.php").write_text("<?php\ndefine( 'DB_PASSWORD', 'Wp-Secret-77' );\n")
    return path


@pytest.mark.parametrize("policy", ["read-only", "locked"])
@pytest.mark.parametrize(
    "command",
    [
        "rev kosmos.yaml",
        "grep -a -h KOSMOS /proc/[0-9]*/environ | rev",
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done | rev",
        "od -c wp-config.php",
        "printenv KOSMOS_TEST_SECRET_TOKEN | sed 's/./& /g'",
    ],
)
def test_a_secret_read_is_refused_headless_under_read_only_and_locked(
    llm: ScriptedLLM, cli_env: dict, project: Path, policy: str, command: str
) -> None:
    (project / "kosmos.yaml").write_text(f"api_key: {KEY}\n")
    llm.script(f"[CMD] {command}", "[DONE] read")
    env = {**cli_env, "KOSMOS_TEST_SECRET_TOKEN": "T0ken-of-the-parent-env"}
    transcript = project / "t.jsonl"
    proc = run_cli(
        ["run", "probe", "--non-interactive", "--policy", policy, "--transcript", str(transcript)],
        env=env,
        cwd=project,
    )
    assert proc.returncode == 4, proc.stderr  # needs input: it would have been asked
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert not [e for e in events if e["type"] == "command_started"]
    told = llm.requests[1].last_user_text
    assert "it reads secret material" in told and "without a person's yes" in told, told
    everything = json.dumps([r.body for r in llm.requests]) + transcript.read_text()
    for secret in (KEY, KEY[::-1], KEY[-14:], "Wp-Secret-77", "T0ken", "T 0 k e n"):
        assert secret not in everything


@pytest.mark.parametrize("policy", ["read-only", "locked"])
def test_over_ssh_too_a_secret_read_is_refused_and_a_plain_read_runs(
    llm: ScriptedLLM, cli_env: dict, home: Path, project: Path, remote: Sshd, policy: str
) -> None:
    write_client_home(home, remote)
    env = {**cli_env, "KOSMOS_API_KEY": KEY}
    env.pop("SSH_AUTH_SOCK", None)
    llm.script(
        "[CMD] grep -a -h KOSMOS /proc/[0-9]*/environ | rev",
        "[CMD] echo $AWS_SECRET_ACCESS_KEY | rev",
        "[CMD] echo plain-read",
        "[DONE] read",
    )
    transcript = project / "t.jsonl"
    args = ["run", "probe", "--host", "box", "--non-interactive", "--policy", policy]
    proc = run_cli([*args, "--transcript", str(transcript)], env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr  # the reads it was refused were done without
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [e["command"] for e in events if e["type"] == "command_started"] == ["echo plain-read"]
    told = [r.last_user_text for r in llm.requests[1:]]
    assert "secret" in told[0] and "secret" in told[1] and "plain-read" in told[2]
    everything = json.dumps([r.body for r in llm.requests]) + transcript.read_text()
    assert not any(p in everything for p in (KEY[::-1], KEY[-14:], KEY[:14]))
