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
#
# Anything that fails ends it with status 126 before PROGRAM runs: a command never runs with
# less of the lock than kosmos asked for. Only perl's core is used (no modules): it starts in
# a few milliseconds.

my ($spec, @program) = @ARGV;
my (%one, @paths, @ports);
for my $item (split ' ', $spec) {
    my ($key, $value) = split /=/, $item, 2;
    if ($key eq 'path') { push @paths, $value }
    elsif ($key eq 'port') { push @ports, $value }
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
exec { $program[0] } @program;
failed("exec $program[0]");
