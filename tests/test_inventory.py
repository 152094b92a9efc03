"""Ansible inventories (INI and YAML) and ssh_config aliases: which hosts a fleet covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kosmos.errors import UsageError
from kosmos.fleet.inventory import InventoryError, expand_range, load_inventory
from kosmos.fleet.targets import HostSpec, resolve_hosts
from kosmos.hosts.sshconfig import SSHConfigFile

INI = """\
# the web tier
[web]
web[01:03].example.com ansible_user=deploy
web-old ansible_host=10.0.0.9 ansible_port=2222

[db]
db1 ansible_host=10.0.1.1
db2:2200

[prod:children]
web
db

[prod:vars]
ansible_user=ops

[db:vars]
ansible_user=postgres
"""

YAML = """\
all:
  vars:
    ansible_user: root
  hosts:
    bastion:
      ansible_host: 192.0.2.1
  children:
    web:
      hosts:
        web[1:2]:
          ansible_port: 2201
      vars:
        ansible_user: deploy
    db:
      hosts:
        db1:
        db2:
          ansible_user: pg
    prod:
      children:
        web:
        db:
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_ini_groups_children_ranges_and_connection_vars(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "hosts", INI))
    assert inv.members("web") == [
        "web01.example.com",
        "web02.example.com",
        "web03.example.com",
        "web-old",
    ]
    assert inv.members("prod") == [*inv.members("web"), "db1", "db2"]
    assert inv.resolve("web01.example.com").target == "deploy@web01.example.com"
    assert inv.resolve("web-old").target == "ops@10.0.0.9:2222"
    # db:vars (the child group) beats prod:vars (its parent).
    assert inv.resolve("db1").target == "postgres@10.0.1.1"
    assert inv.resolve("db2").target == "postgres@db2:2200"


def test_ini_var_line_without_equals_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"hosts:\d+: expected key=value, got 'lonely'"):
        load_inventory(write(tmp_path, "hosts", INI + "[db:vars]\nlonely\n"))


def test_yaml_inventory_with_nested_children(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "hosts.yml", YAML))
    assert inv.hosts == ["bastion", "web1", "web2", "db1", "db2"]
    assert inv.members("prod") == ["web1", "web2", "db1", "db2"]
    assert inv.members("ungrouped") == ["bastion"]
    assert inv.resolve("bastion").target == "root@192.0.2.1"
    assert inv.resolve("web2").target == "deploy@web2:2201"
    assert inv.resolve("db2").target == "pg@db2"
    assert inv.resolve("db1").target == "root@db1"


def test_host_patterns(tmp_path: Path) -> None:
    inv = load_inventory(write(tmp_path, "hosts.yaml", YAML))
    assert inv.select("all") == inv.hosts
    assert inv.select("web:db1") == ["web1", "web2", "db1"]
    assert inv.select("prod:!db") == ["web1", "web2"]
    assert inv.select("prod:&db") == ["db1", "db2"]
    assert inv.select("w*") == ["web1", "web2"]
    assert inv.select("~^db[0-9]$") == ["db1", "db2"]
    assert inv.select("nothing") == []


def test_ranges() -> None:
    assert expand_range("web[08:10]") == ["web08", "web09", "web10"]
    assert expand_range("db-[a:c]") == ["db-a", "db-b", "db-c"]
    assert expand_range("n[1:5:2]x") == ["n1x", "n3x", "n5x"]
    assert expand_range("r[1:2]c[1:2]") == ["r1c1", "r1c2", "r2c1", "r2c2"]
    with pytest.raises(ValueError, match="bad host range"):
        expand_range("web[1:b]")


def test_bad_inventories_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"bad\.yml:3: not valid YAML"):
        load_inventory(write(tmp_path, "bad.yml", "all:\n  hosts: [\n"))
    with pytest.raises(InventoryError, match="unknown key 'host'"):
        load_inventory(write(tmp_path, "typo.yml", "all:\n  host:\n    a:\n"))
    with pytest.raises(InventoryError, match=r"ini:1: unknown section"):
        load_inventory(write(tmp_path, "ini", "[web:nope]\na\n"))
    with pytest.raises(InventoryError, match="ansible_port must be a number"):
        load_inventory(write(tmp_path, "p", "a ansible_port=ssh\n")).resolve("a")
    with pytest.raises(InventoryError, match="cannot read the inventory"):
        load_inventory(tmp_path / "missing")


def test_hosts_glob_skips_patterns_and_follows_includes(tmp_path: Path) -> None:
    ssh = tmp_path / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    (ssh / "conf.d" / "extra").write_text("Host web9\n  HostName 10.0.0.9\n")
    config = ssh / "config"
    config.write_text(
        "Include conf.d/*\n"
        "Host web1 web2 !web3\n  User deploy\n"
        "host=db1\n"
        "Host *.internal web?\n"
        "Match host foo\n  User x\n"
    )
    specs = resolve_hosts([], "web*,db*", inventory=None, ssh_config=SSHConfigFile(config, "me"))
    assert [s.name for s in specs] == ["web9", "web1", "web2", "db1"]


def test_resolve_hosts_merges_flags_and_patterns(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("Host web1 web2 db1\n")
    specs = resolve_hosts(
        ["db1", "local"], "web*", inventory=None, ssh_config=SSHConfigFile(config, "me")
    )
    assert [s.name for s in specs] == ["db1", "local", "web1", "web2"]
    with pytest.raises(UsageError, match=r"--hosts 'app\*' matches no alias .* web1, web2, db1"):
        resolve_hosts([], "app*", inventory=None, ssh_config=SSHConfigFile(config, "me"))
    inv = write(tmp_path, "hosts.yml", YAML)
    specs = resolve_hosts([], "db", inventory=inv, ssh_config=SSHConfigFile(config, "me"))
    assert specs == [HostSpec("db1", "root@db1"), HostSpec("db2", "pg@db2")]
    with pytest.raises(UsageError, match=r"matches no host in .*hosts\.yml \(groups: web, db"):
        resolve_hosts([], "cache", inventory=inv, ssh_config=SSHConfigFile(config, "me"))
