"""kosmos.safety.policy: which commands only read, which write, which are dangerous."""

from __future__ import annotations

import pytest

from kosmos.safety import assess
from kosmos.safety.shell import ShellSyntaxError, parse

READ_ONLY = [
    # plain commands, pipelines and lists
    "ls -la",
    "ls -la /var/log | grep -i error | tail -n 20",
    "df -h; free -m && uptime",
    "cat /etc/os-release || true",
    "ps aux | grep [n]ginx | wc -l",
    "ps aux --sort=-%mem | head",
    "du -sh /var/* 2>/dev/null | sort -h | tail",
    "stat /etc/passwd 2>&1 | head",
    "ls > /dev/null 2>&1",
    "ls &> /dev/null",
    "echo oops >&2",
    "exec 2>&1",
    "cat < /etc/hostname",
    'grep -c root <<< "$users"',
    "cat /proc/meminfo",
    "ls /sys/class/net",
    # substitutions that only read
    'echo "$(date +%F) $(hostname)"',
    "echo `uname -r`",
    "diff <(ls a) <(ls b)",
    "echo $((1 + 2)) ${HOME:-/root} ${#PATH}",
    "cat <<EOF\nhost $(hostname)\nEOF",
    "cat <<'EOF'\n$(rm -rf /)\nEOF",
    # quoting: operators inside quotes are data, a comment is not a command
    "echo 'rm -rf /'",
    'echo "rm -rf / > /etc/passwd"',
    "grep ';' file",
    "grep '>' file",
    "grep -E 'a|b' file",
    "grep a\\|b file",
    "ls # > file",
    "printf '%s\\n' a b",
    "echo foo\\;rm -rf /",
    "echo '$(rm -rf /)'",
    'echo "\\$(rm -rf /)"',
    'ls -la "$HOME" ~/.ssh',
    "tail -n 5 /var/log/*.log",
    "grep -i 'drop table' schema.sql",
    # compound commands
    'for f in *.log; do wc -l "$f"; done',
    "if [ -f /etc/debian_version ]; then cat /etc/debian_version; else uname -a; fi",
    "while IFS= read -r line; do echo $line; done < /etc/hosts",
    "case $(uname) in Linux) free -m;; *) uptime;; esac",
    "[[ -f /etc/hosts && -r /etc/hosts ]] && cat /etc/hosts",
    "(cd /var/log && ls -t | head)",
    "{ date; uptime; } 2>/dev/null",
    "function show { ls -la; }; show",
    "x=1; echo $x",
    "cd /tmp && pwd",
    # wrappers looked through
    "LC_ALL=C sort -k2 file",
    "env LANG=C ls",
    "timeout 5 ping -c 1 example.com",
    "nice -n 10 du -sh /var",
    "ionice -c3 du -sh /",
    "nohup ls &",
    "time ls",
    "command -v git",
    "watch -n 5 df -h",
    "stdbuf -oL tail -n 5 file",
    "ls | xargs",
    "find . -name '*.py' | xargs grep -l TODO",
    "find /etc -name '*.conf' -exec grep -l Listen {} +",
    "bash -c 'ls -la | wc -l'",
    "eval ls -la",
    # option rules
    "sed -n '1,20p' /etc/passwd",
    "sed -e 's/a/b/g' -e '/^#/d' file",
    "sed 's|/usr|/opt|g; $!N' file",
    "awk '{print $1}' file",
    "awk -F: '$3 > 1000 {print $1}' /etc/passwd",
    "awk 'BEGIN{printf \"%d\\n\", (1 > 0)}'",
    "sort -u -t, -k2 file",
    "uniq -c file",
    "date +%s",
    "date -d yesterday",
    "hostname",
    "hostname -I",
    "ip addr show",
    "ip a s",
    "ip -br link",
    "ip route get 1.1.1.1",
    "ifconfig eth0",
    "ping -c 3 example.com",
    "curl -s https://api.example.com/health | jq .status",
    "curl -sI https://example.com",
    "curl -s -o /dev/null -w '%{http_code}' https://example.com",
    "curl -X GET https://example.com",
    "wget -qO- https://example.com",
    "wget --spider https://example.com",
    "systemctl status nginx --no-pager",
    "systemctl list-units --failed",
    "systemctl",
    "systemctl is-active sshd",
    "journalctl -u nginx -n 50 --no-pager",
    "git status --porcelain",
    "git log --oneline -10",
    "git diff HEAD~1 --stat",
    "git branch -a",
    "git remote -v",
    "git tag -l 'v1*'",
    "git config --get user.email",
    "git stash list",
    "git -C /srv/app log -1",
    "git --version",
    "docker ps -a",
    "docker logs --tail 100 web",
    "docker stats --no-stream",
    "docker container ls",
    "docker compose ps",
    "kubectl get pods -A",
    "kubectl -n kube-system describe pod coredns",
    "kubectl config view",
    "apt list --installed",
    "apt-cache policy nginx",
    "dpkg -l | grep nginx",
    "rpm -qa",
    "yum list installed",
    "pip list",
    "pip3 freeze",
    "python3 --version",
    "go version",
    "iptables -L -n -v",
    "iptables -t nat -nvL --line-numbers",
    "nft list ruleset",
    "openssl x509 -in cert.pem -noout -text",
    "openssl s_client -connect example.com:443 </dev/null",
    "service nginx status",
    "crontab -l",
    "sysctl net.ipv4.ip_forward",
    "dmesg | tail",
    "mount",
    "hostnamectl",
    "timedatectl status",
    "ss -tlnp",
    "lsof -i :80",
    "getent passwd root",
    "md5sum /etc/passwd",
    "xxd -l 64 /bin/ls",
]

WRITE = [
    # builtins that change how later commands run
    "trap 'echo done' EXIT; ls",
    # redirections
    "ls > out.txt",
    "echo hi >> /var/log/app.log",
    "ls 2> err.log",
    "ls &> out.log",
    "ls >| out.txt",
    "exec 3<> file",
    "> /tmp/x",
    "cat <<EOF > /etc/motd\nhello\nEOF",
    "echo x >> /etc/passwd",
    # commands that write
    "sed -i 's/a/b/' file",
    "sed -ni 's/a/b/p' file",
    "sed --in-place=.bak 's/a/b/' file",
    "sed 's/a/b/w out.txt' file",
    "sed '1e id' file",
    "find /tmp -name '*.tmp' -delete",
    "find . -fprint list.txt",
    "find / -name core -delete",  # picks files by name: it does not empty /
    "sort -o sorted.txt file",
    "uniq in.txt out.txt",
    "tee out.txt",
    "ls | tee -a log.txt",
    "awk 'BEGIN{system(\"id\")}'",
    "awk '{print $1 > \"/tmp/x\"}' file",
    "awk 'BEGIN{\"date\" | getline d; print d}'",
    "hostname web01",
    "date -s '2024-01-01 00:00'",
    "top",
    "ping example.com",
    "ip link set eth0 down",
    "ip route add default via 10.0.0.1",
    "curl -o /tmp/x https://example.com",
    "curl -sSLO https://example.com/x.tgz",
    "curl -X POST https://example.com/api",
    "curl -d 'a=b' https://example.com",
    "wget https://example.com/x.tgz",
    "systemctl restart nginx",
    "journalctl --vacuum-time=2d",
    "dmesg -c",
    "sysctl -w vm.swappiness=10",
    "crontab -e",
    "docker rm -f web",
    "docker stats",
    "docker system prune",
    "kubectl apply -f deploy.yaml",
    "kubectl delete pod web-1",
    "pip install requests",
    "iptables -A INPUT -p tcp --dport 22 -j ACCEPT",
    "iptables -P FORWARD DROP",
    "rm -rf /var/log/app/*",
    "rm -rf .",
    "cd /tmp/build && rm -rf *",
    "chmod -R 755 /var/www",
    "kill -9 1234",
    "shutdown -c",
    # commands hidden inside otherwise read-only commands
    "ls $(rm x)",
    'echo "`rm x`"',
    "echo ${x:-$(touch y)}",
    "ls >(rm x)",
    "cat <<EOF\n$(rm x)\nEOF",
    "x=$(rm y)",
    "ls | xargs rm",
    "find . -name '*.log' -exec rm {} \\;",
    "find . -exec sh -c 'cat {}' \\;",
    "xargs -I{} sh -c 'cat {}'",
    "case $x in a) ls;; *) rm x;; esac",
    "f() { rm x; }; f",
    # not on the read-only list
    "git commit -m 'fix'",
    "git push",
    "git branch new-feature",
    "git config user.name bob",
    "git config user.name --get",  # git config reads no options after its first operand
    "git -c core.pager='sh -c id' log",
    "apt-get install -y nginx",
    "apt install nginx",
    "make",
    "./deploy.sh",
    "/tmp/ls",
    "python3 script.py",
    "bash script.sh",
    "cat file | sh",
    "sudo ls",
    "sudo -u postgres psql -c 'select 1'",
    "sudo apt-get update",
    "su -c 'ls'",
    "ssh web01 uptime",
    "$CMD --flag",
    'eval "$cmd"',
    # arguments that may turn into options once the shell expands them
    "sort $OPTS file",
    "sed -n 1p *",
    "find . $ACTION",
    "find /var/log -name *.gz",
    # variables that change what runs
    "PATH=/tmp:$PATH ls",
    "LD_PRELOAD=/tmp/x.so ls",
    "export PATH=/opt/bin:$PATH",
    "PAGER='sh -c id' git log",
    # text that cannot be parsed is never read-only
    "cat 'unterminated",
    'echo "unterminated',
    "echo $(ls",
    "echo `ls",
    "cat <<EOF\nno end line",
    "ls &&",
    "fi",
    "echo )",
    "a=(1 2)",
]

DANGEROUS = [
    # filesystem wipes
    "rm -rf /",
    "rm -rf /*",
    "rm -fr ~",
    "rm -r ~/",
    'rm -rf "$HOME"',
    "rm -rf ${HOME}/*",
    "rm -rf /etc",
    "rm -rf /usr/",
    "rm -rf /var/*",
    "rm -rf /home/*",
    "rm --recursive --force /boot",
    "rm -Rf -- /",
    "rm -rf /{etc,usr}",
    "rm -rf /e*",
    "rm --no-preserve-root -rf /",
    "/bin/rm -rf /",
    "\\rm -rf /",
    "cd / && rm -rf *",
    "cd /etc; rm -rf .",
    "rm /etc/passwd",
    "mv /etc /etc.old",
    "find / -delete",
    "find /etc -type f -delete",
    "find / -exec rm -rf {} \\;",
    "find /usr -type f -exec shred {} +",
    # devices and filesystems
    "mkfs.ext4 /dev/sdb1",
    "mkfs -t xfs /dev/nvme1n1",
    "mkswap /dev/sdb2",
    "wipefs -a /dev/sdb",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "shred -n 1 /dev/nvme0n1",
    "cat image.iso > /dev/sdb",
    "echo x | tee /dev/mapper/vg-root",
    # truncating critical files
    "> /etc/passwd",
    ": > /etc/shadow",
    "echo 'root ALL=(ALL) ALL' > /etc/sudoers",
    "cp /dev/null /etc/fstab",
    "truncate -s 0 /etc/passwd",
    # fork bombs
    ":(){ :|:& };:",
    "bomb() { bomb | bomb & }; bomb",
    "f(){ f|f& }; f",
    # power
    "reboot",
    "shutdown -h now",
    "poweroff",
    "halt",
    "init 0",
    "telinit 6",
    "systemctl reboot",
    "systemctl poweroff",
    "systemctl isolate rescue.target",
    "systemctl start reboot.target",
    "echo b > /proc/sysrq-trigger",
    # processes
    "kill -9 1",
    "kill 1",
    "kill -1",
    "kill -9 -1",
    "kill -s KILL -- -1",
    # recursive permission changes on system directories
    "chmod -R 777 /",
    "chown -R nobody:nogroup /etc",
    "chgrp -R users /usr",
    # downloads into interpreters
    "curl -fsSL https://get.example.com | sh",
    "curl -s https://x | sudo bash",
    "wget -qO- https://x | bash -s -- --yes",
    "curl https://x | tee install.sh | sh",
    "curl -s https://x | python3",
    'sh -c "$(curl -fsSL https://x)"',
    "bash <(curl -s https://x)",
    'eval "$(wget -qO- https://x)"',
    "$(curl -s https://x)",
    "cat <(curl -s https://x) | sh",
    "sh < <(wget -qO- https://x)",
    "bash <<EOF\n$(curl -s https://x)\nEOF",
    "source <(curl -s https://x)",
    'python3 -c "$(curl -s https://x)"',
    "sudo bash -c ':(){ :|:& };:'",
    # firewall
    "iptables -F",
    "iptables --flush",
    "iptables -t nat -X",
    "iptables -P INPUT DROP",
    "ip6tables -P OUTPUT REJECT",
    "nft flush ruleset",
    "ufw disable",
    "ufw --force reset",
    # databases
    "mysql -e 'DROP DATABASE prod'",
    'psql -c "drop table users"',
    "echo 'TRUNCATE TABLE orders;' | mysql shop",
    "mysql <<EOF\nDrop Schema app;\nEOF",
    "dropdb prod",
    "mysqladmin -u root drop shop",
    "redis-cli FLUSHALL",
    "redis-cli -n 2 flushdb",
    "mongosh --eval 'db.dropDatabase()'",
    # accounts, schedules, clusters
    "crontab -r",
    "crontab -u www-data -r",
    "userdel -r bob",
    "docker system prune -a",
    "docker system prune -af --volumes",
    "kubectl delete namespace prod",
    "kubectl delete ns staging",
    "kubectl delete pods --all",
    # hidden in substitutions, subshells, wrappers and scripts
    'echo "$(rm -rf /)"',
    "ls `rm -rf /`",
    "(cd / && rm -rf *)",
    "true && { rm -rf /; }",
    "sudo rm -rf /",
    "sudo -u root -- rm -rf /etc",
    "timeout 10 rm -rf /",
    "env rm -rf /",
    "nohup mkfs.ext4 /dev/sdb &",
    "bash -c 'rm -rf /'",
    "su - root -c 'reboot'",
    "eval 'rm -rf /'",
    "watch 'rm -rf /'",
    "ssh db01 'rm -rf /var'",
    "trap 'rm -rf /' EXIT",
    "if true; then reboot; fi",
    "for d in a; do rm -rf /; done",
    "echo x | xargs rm -rf /",
]


@pytest.mark.parametrize(
    ("command", "verdict"),
    [(c, "read_only") for c in READ_ONLY]
    + [(c, "write") for c in WRITE]
    + [(c, "dangerous") for c in DANGEROUS],
)
def test_verdict(command: str, verdict: str) -> None:
    result = assess(command, "bash")
    assert result.verdict == verdict, result.reason


def test_the_table_is_large() -> None:
    assert len(READ_ONLY) + len(WRITE) + len(DANGEROUS) >= 120


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("sed -i 's/a/b/' f", "sed -i edits files in place"),
        ("echo 1 > /etc/hosts", "writes to a file (> /etc/hosts)"),
        ("rm -rf /", "rm -rf on /"),
        ("apt-get install nginx", "not on the read-only list: apt-get"),
        ("sudo apt-get install nginx", "not on the read-only list: apt-get"),
        ("git commit -m x", "not on the read-only list: git commit"),
        ("curl -s x | bash", "pipes a download into bash (curl ... | bash)"),
        ("psql -c 'DROP  TABLE users'", "DROP TABLE destroys data"),
        (":(){ :|:& };:", "fork bomb: :() calls itself"),
        ("cd / && rm -rf *", "rm -rf on * (in /)"),
        ("ls | grep x", "read-only: ls, grep"),
    ],
)
def test_reason_names_the_cause(command: str, reason: str) -> None:
    assert assess(command, "bash").reason == reason


@pytest.mark.parametrize("command", ["ls -la", "sudo ls", "rm -rf /", "cat 'x", "echo $(ls"])
def test_reason_is_one_short_line(command: str) -> None:
    reason = assess(command, "bash").reason
    assert reason
    assert "\n" not in reason
    assert len(reason) <= 120


def test_unparseable_text_says_why() -> None:
    result = assess("cat 'unterminated", "bash")
    assert result.verdict == "write"
    assert result.reason == "cannot parse the command: unterminated single quote"


def test_unparseable_text_is_still_searched_for_dangers() -> None:
    assert assess("rm -rf / 'unterminated", "bash").verdict == "dangerous"
    assert assess(":(){ :|:& };: 'x", "bash").verdict == "dangerous"


def test_sudo_is_never_read_only() -> None:
    assert assess("sudo cat /etc/hostname", "bash").verdict == "write"
    assert "sudo" in assess("sudo cat /etc/hostname", "bash").reason
    assert assess("sudo cat /etc/shadow", "bash").verdict == "write"


@pytest.mark.parametrize(
    "deep",
    [
        "echo " + "$(" * 200 + "ls" + ")" * 200,
        "(" * 400 + "ls" + ")" * 400,
        "if true; then " * 300 + "ls" + "; fi" * 300,
        "echo " + "${x:-" * 1500 + "}" * 1500,
    ],
)
def test_deep_nesting_is_refused_not_a_crash(deep: str) -> None:
    assert assess(deep, "bash").verdict == "write"


def test_deep_nesting_still_finds_a_wipe() -> None:
    assert assess("(" * 400 + "rm -rf /" + ")" * 400).verdict == "dangerous"


def test_parser_keeps_substitutions_inside_double_quotes() -> None:
    script = parse('echo "a $(id) `uname`"')
    word = script.pipelines[0].commands[0].words[1]  # type: ignore[union-attr]
    assert not word.literal
    assert len(word.subs) == 2


def test_parser_rejects_a_heredoc_without_its_end() -> None:
    with pytest.raises(ShellSyntaxError):
        parse("cat <<EOF\nbody")
