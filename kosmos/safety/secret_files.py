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
    # Every process's environment: the keys its parent was started with (kosmos blanks its
    # own, not those of a `timeout`, a CI step or a `sudo` above it).
    "/proc/*/environ",
    "/proc/*/task/*/environ",
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
    # kosmos's own settings, which may hold its API keys and providers' keys.
    "~/.config/kosmos/config.yaml",
    "/etc/kosmos/config.yaml",
)

# The last two components of a path that holds secrets wherever it lies: kosmos's user
# settings under any XDG_CONFIG_HOME.
SECRET_TAILS = ("kosmos/config.yaml", "kosmos/kosmos.yaml", ".kosmos/config.yaml")

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
    # a project's kosmos settings (api_key, providers' keys)
    "kosmos.yaml",
    # web applications' settings: the database password and the signing keys and salts
    "wp-config.php",
    "wp-config.php.*",
    "LocalSettings.php",
    # a process's environment, as /proc shows it (`cd /proc/1 && cat environ`)
    "environ",
)

# Names the patterns above take in that are public or examples.
NOT_SECRET_NAMES = (
    "*.pub",
    "*-cert.pub",
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    "wp-config-sample.php",
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
    "~/.config/kosmos/config.yaml",
    "/proc/1/environ",
    "/proc/self/environ",
    "/proc/1/task/1/environ",
    "/var/www/html/wp-config.php",
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
    "kosmos.yaml",
    "wp-config.php",
    "environ",
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

# What makes a variable's name secret (matched case-insensitively anywhere in the name, or at
# its end): its value is then secret material, as a key file's contents are. A tool that
# prints it, or a command that expands it (`echo $AWS_SECRET_ACCESS_KEY`), reads a secret
# that the redactor may not recognise once reshaped (`| sed 's/./& /g'`, `| rev`).
SECRET_VARIABLE_WORDS = (
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
)
SECRET_VARIABLE_ENDS = ("_KEY",)
# What a grep pattern over the environment aims at secrets with (a substring of their names).
SECRET_GREP_WORDS = (*SECRET_VARIABLE_WORDS, "KEY", "PASS", "AUTH", "PRIVATE")

# Programs that print the values of the variables they are given by name.
VARIABLE_PRINTERS = {
    "printenv": (),
    "declare": ("-p",),
    "typeset": ("-p",),
    "export": ("-p",),
    "readonly": ("-p",),
}
# Programs that, given no name (and no command to run), print every variable: the values
# under their names, which the redactor masks only while the name stays beside the value.
ENV_DUMPERS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "readonly"})
# What keeps each line whole, its name beside its value, so the redactor still sees the pair
# (`env | sort`, `env | grep -v PATH`); anything else (`env | rev`, `env | cut -d= -f2`,
# `env | grep -o '=.*'`) may print a value without its name.
LINE_KEEPERS = frozenset(
    {"grep", "egrep", "fgrep", "sort", "uniq", "head", "tail", "wc", "less", "more", "cat", "nl"}
)
