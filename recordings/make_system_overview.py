"""Re-record `system-overview.jsonl`, the run `kosmos run system-overview --replay bundled` plays.

Run from the repository root after changing the skill: `python recordings/make_system_overview.py`.
The replies are the ones a small model gives for this skill. The commands run on this
machine; their outputs are then replaced, in the events and in the messages sent to the
LLM alike, by those of a small web server ("demo"), so the recording shows no detail of
the machine it was made on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llmserver import ScriptedLLM  # noqa: E402

REPLIES = [
    "[CMD] hostname; uname -srm; grep -E '^PRETTY_NAME=' /etc/os-release 2>/dev/null",
    "[CMD] uptime; nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo",
    "[CMD] free -h 2>/dev/null || head -n 5 /proc/meminfo",
    "[CMD] df -hP -x tmpfs -x devtmpfs -x squashfs 2>/dev/null || df -hP",
    "[CMD] (ps -eo pid,user,%cpu,%mem,etime,comm --sort=-%cpu 2>/dev/null || ps aux) | head -n 11",
    "[CMD] (ps -eo pid,user,%cpu,%mem,rss,comm --sort=-%mem 2>/dev/null || ps aux) | head -n 11",
    "[CMD] command -v systemctl >/dev/null && systemctl --failed --no-pager --no-legend 2>&1 "
    "|| echo 'systemctl missing or not usable (no systemd, e.g. a container)'",
    "[DONE] OK (this report is the recorded one, about the demo host; run without --replay "
    "for an LLM to report on this machine)\n"
    "- OS/kernel: Debian GNU/Linux 12 (bookworm), Linux 6.1.0-27-amd64 x86_64\n"
    "- Uptime/load: up 12 days; load 0.41 / 0.33 on 2 CPUs, well below the CPU count\n"
    "- Memory: 2.7Gi of 3.8Gi available; swap unused\n"
    "- Disks: / at 41%, /boot/efi at 10%; none at 85% or more\n"
    "- Top processes: postgres (3.1% CPU, 6.2% mem), nginx (2.4% CPU), php-fpm8.2\n"
    "- Failed units: none",
]

PS_HEAD = "  PID USER     %CPU %MEM"
DEMO = {
    "hostname": 'demo\nLinux 6.1.0-27-amd64 x86_64\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"',
    "uptime": " 09:14:02 up 12 days,  3:41,  1 user,  load average: 0.41, 0.33, 0.29\n2",
    "free": "               total        used        free      shared  buff/cache   available\n"
    "Mem:           3.8Gi       1.1Gi       1.2Gi        41Mi       1.7Gi       2.7Gi\n"
    "Swap:          1.0Gi          0B       1.0Gi",
    "df": "Filesystem      Size  Used Avail Use% Mounted on\n"
    "/dev/vda1        39G   15G   22G  41% /\n"
    "/dev/vda15      124M   12M  113M  10% /boot/efi",
    "(ps -eo pid,user,%cpu,%mem,etime": PS_HEAD + "     ELAPSED COMMAND\n"
    "  911 postgres  3.1  6.2 12-03:40:12 postgres\n"
    "  802 www-data  2.4  1.1 12-03:40:15 nginx\n"
    " 1190 www-data  1.2  2.3 12-03:39:58 php-fpm8.2\n"
    "  640 root      0.3  0.4 12-03:40:20 containerd\n"
    "    1 root      0.0  0.3 12-03:41:02 systemd",
    "(ps -eo pid,user,%cpu,%mem,rss": PS_HEAD + "   RSS COMMAND\n"
    "  911 postgres  3.1  6.2 245812 postgres\n"
    " 1190 www-data  1.2  2.3  91240 php-fpm8.2\n"
    "  802 www-data  2.4  1.1  43520 nginx\n"
    "  640 root      0.3  0.4  15872 containerd\n"
    "    1 root      0.0  0.3  12288 systemd",
    "command -v systemctl": "",
}


def _demo_output(command: str) -> str:
    return next(text for prefix, text in DEMO.items() if command.startswith(prefix))


def demo_host(events: list[dict]) -> list[dict]:
    """The events with every command output replaced by the demo host's."""
    swaps: dict[str, str] = {}
    for event in events:
        if event["type"] == "command_finished":
            text = _demo_output(event["command"])
            swaps[event["sent_to_llm"]] = text or "(no output)"
            event.update(output=text + "\n" if text else "", sent_to_llm=text or "(no output)")
            event["bytes"] = len(event["output"].encode())
    for event in events:
        if event["type"] == "llm_request":
            for message in event["new_messages"]:
                for old, new in swaps.items():
                    prefix = f"Command output:\n{old}\n"
                    if message["content"].startswith(prefix):
                        message["content"] = (
                            f"Command output:\n{new}\n" + message["content"][len(prefix) :]
                        )
    return events


def main() -> None:
    target = ROOT / "recordings" / "system-overview.jsonl"
    llm = ScriptedLLM().start()
    try:
        llm.script(*REPLIES)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run.jsonl"
            env = {
                **os.environ,
                "AI_KOSMOS_MODEL_BASE_URL": llm.base_url,
                "AI_MODEL": "qwen2.5:7b",
                "PYTHONPATH": str(ROOT),
                "HOME": tmp,
            }
            subprocess.run(
                [sys.executable, "-m", "kosmos", "run", "system-overview", "--non-interactive"]
                + ["--yes", "--transcript", str(out)],
                env=env,
                cwd=tmp,
                check=True,
            )
            lines = []
            events = demo_host([json.loads(line) for line in out.read_text().splitlines()])
            for event in events:
                event["host"] = "demo"
                if event["type"] == "run_started":
                    event.update(
                        skill_path="skills/system-overview/SKILL.md",
                        base_url="http://localhost:3002/v1",
                        transcript=None,
                    )
                if event["type"] == "result":
                    event["transcript"] = None
                lines.append(json.dumps(event, ensure_ascii=False))
        target.write_text("\n".join(lines) + "\n")
    finally:
        llm.stop()
    print(target)


if __name__ == "__main__":
    main()
