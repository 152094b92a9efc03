"""Where secret material lives on a host, as data: the paths and file names whose contents a
command may read only with a person's yes (redaction cannot survive `base64` or `xxd` of a
private key).

A path here starts with `/`, or with `~/` for a home directory (any user's: `/root/...`
and `/home/NAME/...` read the same). Patterns are shell globs, matched one path component
at a time. `SECRET_EXAMPLES` are concrete paths for the patterns: a glob the command line
holds (`cat ~/.ssh/*`) is a secret read when it would match one of them, and a directory
read recursively (`grep -r x /etc`) when one lies inside it.
"""

from __future__ import annotations

SECRET_PATHS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/master.passwd",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private/*",
    "/etc/pki/tls/private/*",
    "/etc/letsencrypt/live/*/privkey*",
    "/etc/letsencrypt/archive/*/privkey*",
    "/etc/kubernetes/*.conf",
    "/etc/kubernetes/pki/*.key",
    "/etc/rancher/k3s/k3s.yaml",
    "/var/lib/kubelet/pki/*.key",
    "/proc/*/environ",
    "~/.ssh/id_*",
    "~/.ssh/identity",
    "~/.kube/config",
    "~/.aws/credentials",
    "~/.config/gcloud/*",
    "~/.config/gcloud/*/*",
    "~/.azure/*",
    "~/.docker/config.json",
    "~/.gnupg/private-keys-v1.d/*",
    "~/.gnupg/secring.gpg",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/gh/hosts.yml",
)

# File names that hold secrets wherever they are.
SECRET_NAMES = (
    ".env",
    ".env.*",
    ".pgpass",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".my.cnf",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".vault-token",
    ".s3cfg",
    ".boto",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.keytab",
    "*.ppk",
    "*key*.pem",
    "*priv*.pem",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "id_xmss*",
    "*.kubeconfig",
)

# Names the patterns above take in that are public or examples.
NOT_SECRET_NAMES = (
    "*.pub",
    "*-cert.pub",
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    "*.pub.pem",
    "*public*.pem",
)

# Concrete paths standing for the patterns, for globs and directories on a command line.
SECRET_EXAMPLES = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssl/private/server.key",
    "/etc/pki/tls/private/server.key",
    "/etc/letsencrypt/live/example.com/privkey.pem",
    "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/pki/ca.key",
    "/etc/rancher/k3s/k3s.yaml",
    "/var/lib/kubelet/pki/kubelet.key",
    "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519",
    "~/.kube/config",
    "~/.aws/credentials",
    "~/.config/gcloud/credentials.db",
    "~/.config/gcloud/legacy_credentials/someone/adc.json",
    "~/.azure/msal_token_cache.json",
    "~/.docker/config.json",
    "~/.gnupg/private-keys-v1.d/keygrip.key",
    "~/.pgpass",
    "~/.netrc",
    "~/.git-credentials",
    "~/.my.cnf",
    "~/.config/gh/hosts.yml",
)

# Basenames standing for SECRET_NAMES, for a glob of names in any directory (`cat *.pem`).
NAME_EXAMPLES = (
    ".env",
    ".env.local",
    ".env.production",
    ".pgpass",
    ".netrc",
    ".git-credentials",
    ".my.cnf",
    ".npmrc",
    "server.key",
    "privkey.pem",
    "key.pem",
    "tls.key",
    "id_rsa",
    "id_ed25519",
    "cluster.kubeconfig",
)

# Programs that read names and metadata, not contents (`ls ~/.ssh` lists names; `stat`,
# `wc` and checksums do not print what a file holds).
_NAME_READERS = (
    "ls stat du df file wc md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum "
    "cksum sum namei readlink realpath basename dirname test [ getfacl lsattr lsof tree cd "
    "pushd popd echo printf find locate which whereis type command dpkg-query dpkg findmnt"
)
NAME_READERS = frozenset(_NAME_READERS.split())

# Programs that read a directory's files when told to recurse (`grep -r`), or always (`rg`).
RECURSIVE_FLAGS = {
    "grep": ("-r", "-R", "--recursive", "--dereference-recursive"),
    "egrep": ("-r", "-R", "--recursive"),
    "fgrep": ("-r", "-R", "--recursive"),
    "zgrep": ("-r", "-R", "--recursive"),
    "diff": ("-r", "--recursive"),
}
ALWAYS_RECURSIVE = frozenset({"rg", "rgrep", "ag", "ack"})
