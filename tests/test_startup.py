"""Start-up: a command imports what it needs when it needs it.

Each test runs the real CLI under `python -X importtime` and reads which modules it loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import pseudo_terminal, run_cli
from tests.llmserver import ScriptedLLM

SKILL = """---
name: probe
description: Look at one thing
---
Run one command and report.
"""

# What a run on the local host has no use for: SSH, the TUI, the chat, a validation library
# (its settings, SKILL.md and events are msgspec records).
HEAVY = (
    "pydantic",
    "pydantic_core",
    "asyncssh",
    "textual",
    "kosmos.chat",
    "kosmos.config_chat",
    "kosmos.tui",
    "kosmos.hosts.ssh",
    "mcp",
    "kosmos.mcp",
    # httpx's own command-line client and what it needs.
    "click",
    "rich",
    "pygments",
)


def imported(stderr: str) -> set[str]:
    """Module names from `-X importtime` lines (`import time: self | cumulative | name`)."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


# What a non-interactive run with the tags protocol (the default) has no use for: the json
# protocol's models and structured client, the parameter dialogue with the LLM.
UNUSED_HEADLESS = (
    "kosmos.engine.protocols.json_steps",
    "kosmos.llm.structured",
    "kosmos.llm.content",
    "kosmos.engine.params_dialog",
    "kosmos.frontends.params_line",
    "kosmos.runs.params",
    # A fresh run reads no transcript back.
    "kosmos.engine.resume",
    "kosmos.runs.replay",
)


def heavy(names: set[str], among: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in among))


def importtime_run(args: list[str], env: dict, cwd: Path) -> tuple[int, set[str]]:
    """`kosmos run ARGS` under `-X importtime`: its exit code and the modules it loaded."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "run", *args],
        env=env,
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, imported(proc.stderr)


def test_a_local_run_loads_no_ssh_tui_or_chat(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    (tmp_path / ".kosmos/skills/probe").mkdir(parents=True)
    (tmp_path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    llm.script("[CMD] echo started", "[DONE] fine")
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "run", "probe", "--host", "local"]
        + ["--non-interactive", "--yes", "--transcript", str(tmp_path / "run.jsonl")],
        env=cli_env,
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = imported(proc.stderr)
    # The run really happened and importtime really reported: the LLM client is among them.
    assert len(llm.requests) == 2 and "httpx" in names
    assert heavy(names) == []
    assert heavy(names, UNUSED_HEADLESS) == []


def test_a_run_neither_looks_for_nor_loads_pydantic_plugins(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    # An installed distribution offering a pydantic plugin, which leaves a file when loaded.
    site, marker = tmp_path / "site", tmp_path / "plugin-loaded"
    (site / "spy_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "spy_plugin-1.0.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n"
    )
    (site / "spy_plugin-1.0.dist-info/entry_points.txt").write_text(
        "[pydantic]\nspy = spy_plugin:plugin\n"
    )
    (site / "spy_plugin.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('loaded')\n"
        "class Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = Plugin()\n"
    )
    env = {**cli_env, "PYTHONPATH": f"{cli_env['PYTHONPATH']}:{site}"}
    # pydantic alone finds and loads it (so this test can fail)...
    model = "import pydantic\nclass M(pydantic.BaseModel):\n    x: int\nM(x=1)\n"
    subprocess.run([sys.executable, "-c", model], env=env, check=True, timeout=60)
    assert marker.read_text() == "loaded"
    marker.unlink()
    # ...a kosmos run, whose settings carry its API key, neither loads it nor reads the
    # installed distributions' metadata to look for it; the json protocol's run, whose replies
    # are checked by pydantic models, too.
    (tmp_path / ".kosmos/skills/probe").mkdir(parents=True)
    (tmp_path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    llm.script('{"action": "cmd", "text": "echo started"}', '{"action": "done", "text": "fine"}')
    code, names = importtime_run(
        ["probe", "--host", "local", "--non-interactive", "--yes", "--protocol", "json"]
        + ["--transcript", str(tmp_path / "run.jsonl")],
        {**env, "KOSMOS_API_KEY": "sk-plugin-must-not-see"},
        tmp_path,
    )
    assert code == 0 and len(llm.requests) == 2
    assert "pydantic" in names and "importlib.metadata" not in names
    assert not marker.exists()


def test_a_pydantic_that_asks_its_plugin_loader_for_more_gets_the_real_one(
    cli_env: dict, tmp_path: Path
) -> None:
    # kosmos stands in for pydantic's private plugin loader; a pydantic that imported any other
    # name from it (a changed upstream) gets the real loader's, and models still validate.
    code = (
        "import kosmos, sys, pydantic\n"
        "from pydantic.plugin._loader import _plugins, get_plugins\n"
        "class M(pydantic.BaseModel):\n    x: int\n"
        "print(M(x=1).x, _plugins, sys.modules['pydantic.plugin._loader'].__doc__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    # `_plugins` exists only in pydantic's own loader (None before any model asked it), and the
    # real module has taken the stand-in's place.
    assert done.stdout.split() == ["1", "None", "None"]


def test_an_httpx_that_needs_more_of_its_cli_module_gets_the_real_one(
    cli_env: dict, tmp_path: Path
) -> None:
    # A changed httpx that imports its command-line module without a fallback, and a name
    # kosmos's stand-in does not offer: httpx still imports, with the real module's names.
    package = tmp_path / "site/httpx"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from ._main import main, VERSION\n")
    (package / "_main.py").write_text("VERSION = 'real'\ndef main():\n    return 'ran'\n")
    code = (
        "import kosmos, sys\n"
        "assert type(sys.modules['httpx._main']).__name__ == 'module'\n"
        "import httpx\n"
        "print(httpx.VERSION, httpx.main(), sys.modules['httpx._main'].__file__.endswith('_main.py'))\n"
    )
    env = {**cli_env, "PYTHONPATH": f"{tmp_path / 'site'}:{cli_env['PYTHONPATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["real", "ran", "True"]


def test_the_json_protocol_and_the_dialogue_load_where_they_are_used(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    # The same measure sees the json protocol's modules on a run that uses it (so the test
    # above can fail), and the parameter dialogue's on a run with a person at the terminal.
    (tmp_path / ".kosmos/skills/probe").mkdir(parents=True)
    (tmp_path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    llm.script('{"action": "done", "text": "fine"}')
    code, names = importtime_run(
        ["probe", "--host", "local", "--protocol", "json", "--non-interactive", "--yes"]
        + ["--transcript", str(tmp_path / "json.jsonl")],
        cli_env,
        tmp_path,
    )
    assert code == 0 and len(llm.requests) == 1
    assert {"kosmos.engine.protocols.json_steps", "kosmos.llm.structured"} <= names
    # Resuming that run reads its transcript back (a finished run is refused, after reading).
    code, names = importtime_run(
        ["--resume", str(tmp_path / "json.jsonl"), "--non-interactive"], cli_env, tmp_path
    )
    assert code == 2 and {"kosmos.engine.resume", "kosmos.runs.replay"} <= names
    with pseudo_terminal() as (master, slave):
        llm.script("[DONE] fine")
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "kosmos", "run", "probe"]
            + ["--host", "local", "--yes", "--transcript", str(tmp_path / "tty.jsonl")],
            env=cli_env,
            cwd=tmp_path,
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "kosmos.frontends.params_line" in imported(proc.stderr)


def test_the_ssh_path_is_still_reached_when_a_host_needs_it(
    llm: ScriptedLLM, cli_env: dict, tmp_path: Path
) -> None:
    # The same measure sees asyncssh when the target is an SSH host (so the test above can fail).
    (tmp_path / ".kosmos/skills/probe").mkdir(parents=True)
    (tmp_path / ".kosmos/skills/probe/SKILL.md").write_text(SKILL)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "run", "probe", "--host"]
        + ["nosuch.invalid", "--non-interactive", "--transcript", str(tmp_path / "run.jsonl")],
        env=cli_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 6, proc.stderr[-2000:]
    names = imported(proc.stderr)
    assert "asyncssh" in names and "pydantic" not in names


def test_help_loads_neither_settings_nor_libraries(cli_env: dict, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "--help"],
        env=cli_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "usage: kosmos" in proc.stdout
    names = imported(proc.stderr)
    assert "kosmos.cli" in names
    assert heavy(names) == []
    assert not {"pydantic", "httpx", "yaml", "asyncio"} & names


def test_chat_settings_are_still_checked_when_the_file_is_read(
    cli_env: dict, tmp_path: Path
) -> None:
    (tmp_path / "kosmos.yaml").write_text("chat:\n  exit_comands: [bye]\n")
    proc = run_cli(["run", "anything", "--host", "local"], env=cli_env, cwd=tmp_path)
    assert proc.returncode == 2
    assert "kosmos.yaml: unknown key 'chat.exit_comands'" in proc.stderr
    assert "exit_commands" in proc.stderr


def test_the_mcp_server_loads_no_tui(cli_env: dict, tmp_path: Path) -> None:
    # stdin at its end: the server starts, finds its client gone, and exits 0.
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kosmos", "mcp"],
        env=cli_env,
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == ""
    names = imported(proc.stderr)
    assert "mcp.server.mcpserver" in names and "kosmos.mcp.server" in names
    assert sorted(n for n in names if n.startswith(("textual", "kosmos.tui"))) == []
