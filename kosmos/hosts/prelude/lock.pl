# kosmos's kernel lock, in perl: run as `perl -e THIS -- SPEC PROGRAM ARGS...`.
#
# Sets no_new_privs, enters the Landlock domain SPEC describes and installs its seccomp filter,
# then execs PROGRAM (the shell that runs the command). SPEC is what kosmos built for this host
# (hosts/lock.py), space-separated:
#
#   prctl=NR               the prctl system call's number on this arch
#   ruleset=SIZE:FS:NET:SCOPED    struct landlock_ruleset_attr, SIZE bytes of it
#   path=ACCESS:PATH       a path-beneath rule (PATH holds no space)
#   port=ACCESS:PORT       a network port rule
#   filter=HEX             the seccomp filter, struct sock_filter[] in hex
#   probe=1                report what held on one line instead of running anything
#   watch=1                also be the wrapper around the command (see `watch` below)
#   mark=1                 with watch: first name the process group on stderr, then send
#                          stderr to stdout
#   env=NAME=VALUE         with watch: set NAME in the command's environment
#   feed=1                 with watch: the first line read from stdin is the command's stdin
#   argv=1                 the command (PROGRAM's last word) is plain words, which every shell
#                          reads as they stand (see `plain` below)
#
# Anything that fails ends it with status 126 before PROGRAM runs: a command never runs with
# less of the lock than kosmos asked for. Only perl's core is used (no modules): it starts in
# a few milliseconds.

my ($spec, @program) = @ARGV;
my (%one, @paths, @ports, @env);
for my $item (split ' ', $spec) {
    my ($key, $value) = split /=/, $item, 2;
    if ($key eq 'path') { push @paths, $value }
    elsif ($key eq 'port') { push @ports, $value }
    elsif ($key eq 'env') { push @env, $value }
    else { $one{$key} = $value }
}
my $probe = $one{probe};
my @report;

# A step that failed: on a probe, noted; before a command, the end.
sub failed {
    my ($step) = @_;
    my $why = "$!";
    if ($probe) { push @report, "$step=$why"; return 0 }
    print STDERR "kosmos: the kernel lock could not be set ($step: $why); the command did not run\n";
    exit 126;
}

# watch=1: the wrapper's work, with no shell around the command. This process goes on to enter
# the lock and exec the command; first it forks the watcher, which stays outside the lock. The
# command gets /dev/null for stdin (or the one line fed); the watcher reads the channel's stdin
# until end-of-file: kosmos sends that to stop the command, and it comes when kosmos is gone
# (killed, the connection cut) or has seen the command end. Then the whole process group gets
# TERM, the command up to a second to end, and what is left KILL, the watcher included. The
# watcher holds no output, so the output closes when the command's processes are gone.
sub watch {
    my ($group) = @_;
    $SIG{TERM} = 'IGNORE';
    close(STDOUT);
    close(STDERR);
    1 while sysread(STDIN, my $ignored, 4096);    # until end-of-file, or stdin fails
    kill 'TERM', -$group;
    for (1 .. 10) {
        last unless kill 0, $group;
        select(undef, undef, undef, 0.1);
    }
    kill 'KILL', -$group;
    exit 0;
}

if ($one{watch} && !$probe) {
    if ($one{mark}) {
        my $dialect = $program[0] =~ m{(?:^|/)bash$} ? 'bash' : '';
        syswrite(STDERR, "\x1fkosmos-pgid $$ " . ($ENV{SHELL} // '') . " $dialect\n");
    }
    for my $pair (@env) {
        my ($name, $value) = split /=/, $pair, 2;
        $ENV{$name} = $value // '';
    }
    my ($line, $byte) = ('', '');
    if ($one{feed}) {    # byte by byte: what follows the line is left to the watcher
        while (sysread(STDIN, $byte, 1)) {
            last if $byte eq "\n";
            $line .= $byte;
        }
    }
    # The command's stdin: the fed line through a pipe (it fits the pipe's buffer), or
    # /dev/null. Opened first, so that a failure ends this before anything starts.
    my $stdin;
    if ($one{feed}) {
        pipe($stdin, my $writer) or failed('pipe');
        syswrite($writer, "$line\n");
        close($writer);
    } else {
        open($stdin, '<', '/dev/null') or failed('open /dev/null');
    }
    # The watcher is forked twice and its first parent exits at once: the command's process
    # is left no live child it did not start (a command that waits for all its children
    # would wait for the watcher, which waits for the command). Where the second fork fails,
    # the first child watches: a command never runs unwatched.
    my $group = $$;    # the group's leader: each command starts in a session of its own
    my $first = fork();
    failed('fork') unless defined $first;
    if ($first == 0) {
        my $watcher = fork();
        watch($group) unless $watcher;
        exit 0;
    }
    open(STDIN, '<&', $stdin) or failed('stdin');
    close($stdin);
    open(STDERR, '>&', \*STDOUT) or failed('stderr') if $one{mark};
}

# perl's syscall passes a number as a number and anything else as a pointer to its bytes:
# every number below is made numeric (0 + ...) so that none is passed as a string.
my $prctl = 0 + $one{prctl};

if ($probe) {
    my $abi = syscall(444, 0, 0, 1);    # landlock_create_ruleset(NULL, 0, VERSION)
    push @report, $abi > 0 ? "abi=$abi" : "abi=0", $abi > 0 ? () : "why=$!";
}

if (syscall($prctl, 38, 1, 0, 0, 0) == 0) {    # PR_SET_NO_NEW_PRIVS
    push @report, 'nnp=ok' if $probe;
} else {
    failed('no_new_privs');
}

LANDLOCK: {
    last LANDLOCK unless defined $one{ruleset};
    my ($size, $fs, $net, $scoped) = split /:/, $one{ruleset};
    my $attr = substr(pack('QQQ', 0 + $fs, 0 + $net, 0 + $scoped), 0, 0 + $size);
    my $ruleset = syscall(444, $attr, 0 + $size, 0);
    if ($ruleset < 0) { failed('landlock_create_ruleset'); last LANDLOCK }
    for my $rule (@paths) {
        my ($access, $path) = split /:/, $rule, 2;
        # O_PATH | O_CLOEXEC: a handle on the file, never opened for reading.
        if (!sysopen(my $handle, $path, 0x200000 | 0x80000)) {
            failed("open $path");
            last LANDLOCK;
        } elsif (syscall(445, 0 + $ruleset, 1, pack('Ql', 0 + $access, fileno($handle)), 0) != 0) {
            failed("landlock_add_rule $path");
            last LANDLOCK;
        }
    }
    for my $rule (@ports) {
        my ($access, $port) = split /:/, $rule, 2;
        if (syscall(445, 0 + $ruleset, 2, pack('QQ', 0 + $access, 0 + $port), 0) != 0) {
            failed("landlock_add_rule port $port");
            last LANDLOCK;
        }
    }
    if (syscall(446, 0 + $ruleset, 0) != 0) { failed('landlock_restrict_self'); last LANDLOCK }
    push @report, 'landlock=ok' if $probe;
}

if (defined $one{filter}) {
    my $filter = pack('H*', $one{filter});
    # struct sock_fprog: the number of instructions, then a pointer to them.
    my $program = pack('S x6 P', length($filter) / 8, $filter);
    if (syscall($prctl, 22, 2, $program, 0, 0) == 0) {    # PR_SET_SECCOMP, MODE_FILTER
        push @report, 'seccomp=ok' if $probe;
    } else {
        failed('seccomp');
    }
}

if ($probe) {
    print join(';', @report), "\n";
    exit 0;
}
# argv=1: kosmos found the command to be plain words (no quote, expansion, operator, builtin
# or keyword: hosts/wrapper.py), which the shell would split on spaces and exec as they stand.
# This execs them itself, one start of the shell fewer, where doing so cannot differ from the
# shell: the program is the first executable file on an absolute PATH, and an ELF binary or a
# `#!` script. Anything else goes to the shell as before (not found, a script without `#!`,
# a relative PATH entry), as does a shell that the environment tells to do more: run code of
# its own first (BASH_ENV, a function exported), trace (SHELLOPTS, BASHOPTS) or pass over
# programs (EXECIGNORE).
sub plain {
    my ($name) = @_;
    return undef if grep { /^(?:BASH_ENV|SHELLOPTS|BASHOPTS|EXECIGNORE)$|^BASH_FUNC_/ } keys %ENV;
    my @candidates;
    if ($name =~ m{/}) {
        @candidates = ($name);
    } else {
        return undef unless defined $ENV{PATH};
        for my $dir (split /:/, $ENV{PATH}, -1) {
            return undef unless $dir =~ m{^/};
            push @candidates, "$dir/$name";
        }
    }
    for my $path (@candidates) {
        next unless -f $path && -x _;
        open(my $file, '<', $path) or return undef;
        my $head = '';
        sysread($file, $head, 4);
        close($file);
        return $head =~ /^(?:#!|\x7fELF)/ ? $path : undef;
    }
    return undef;
}

if ($one{argv}) {
    my @words = split / /, $program[-1];
    my $path = plain($words[0]);
    exec { $path } @words if defined $path;
}
exec { $program[0] } @program;
failed("exec $program[0]");
