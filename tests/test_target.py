"""TARGET parsing and the ~/.ssh/config aliases `kosmos hosts` lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.errors import UsageError
from kosmos.hosts.sshconfig import SSHConfigFile
from kosmos.hosts.target import Target, parse_target


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("web1", Target("web1")),
        ("deploy@web1", Target("web1", user="deploy")),
        ("deploy@10.0.0.7:2222", Target("10.0.0.7", user="deploy", port=2222)),
        ("[::1]:2222", Target("::1", port=2222)),
        ("fe80::1", Target("fe80::1")),
        ("a@b@host", Target("host", user="a@b")),
    ],
)
def test_parse_target(text: str, expected: Target) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("web1:ssh", "port must be a number"),
        ("web1:70000", "port must be a number"),
        ("@web1", "empty user"),
        ("[::1", "missing ']'"),
        ("bad host", "not a host name"),
    ],
)
def test_bad_targets_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_target(text)


def test_label_is_what_the_operator_typed() -> None:
    assert parse_target("deploy@10.0.0.7:2222").label == "deploy@10.0.0.7:2222"
    assert parse_target("[::1]:22").label == "[::1]:22"


def test_config_aliases_follow_includes_and_skip_patterns(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "extra").write_text("Host db1 db2\n  HostName 10.0.0.9\n")
    config = tmp_path / "config"
    config.write_text(
        "# fleet\nHost web1 web2 *.internal !bastion\n  User deploy\n"
        f"Include {tmp_path}/conf.d/*\nHost=web1\nHost ?x\n"
    )
    assert SSHConfigFile(config, "me").aliases() == ["web1", "web2", "db1", "db2"]
    assert SSHConfigFile(tmp_path / "missing", "me").aliases() == []
