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

my (%one, @paths, @ports, @env, $probe, @report);

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

# read=LIMIT (from the server): PROGRAM is paths to read, in the lock, with no program run: the
# work of kosmos's shell script for its own first read (hosts/ssh_read.py), with its output and
# exit statuses. `try N` for each path tried; for the first file with a byte that is not
# blank, `hit N` and the file (LIMIT + 1 bytes of it at most). 44: none holds text; 45: a link
# that leads nowhere; 46: a file that cannot be read (why, on the last line).
sub first_text {
    my ($limit, @paths) = @_;
    for my $i (0 .. $#paths) {
        my $path = $paths[$i];
        $path =~ s{^~(?=/|\z)}{$ENV{HOME} // ''}e;
        syswrite(STDOUT, "try $i\n");
        return 45 if -l $path && !-e $path;
        next unless -e $path && !-d _;    # read as grep reads it: a FIFO may never end
        my ($data, $got) = ('', 1);
        my $opened = open(my $file, '<', $path);
        while ($opened && $got && length($data) <= $limit) {
            $got = sysread($file, $data, $limit + 1 - length($data), length($data));
        }
        if (!$opened || !defined $got) {
            syswrite(STDOUT, "$path: $!\n");
            return 46;
        }
        next unless length($data) > $limit || $data =~ /[^ \t\n\r\f\x0b]/;
        $data = "hit $i\n$data";
        while (length $data) {
            my $n = syswrite(STDOUT, $data) or return 46;
            substr($data, 0, $n) = '';
        }
        return 0;
    }
    return 44;
}

# The prelude's work for one command: SPEC, then PROGRAM and its arguments (see above).
sub main {
    my ($spec, @program) = @_;
    %one = ();
    @paths = @ports = @env = @report = ();
    for my $item (split ' ', $spec) {
        my ($key, $value) = split /=/, $item, 2;
        if ($key eq 'path') { push @paths, $value }
        elsif ($key eq 'port') { push @ports, $value }
        elsif ($key eq 'env') { push @env, $value }
        else { $one{$key} = $value }
    }
    $probe = $one{probe};
    for my $pair (@env) {
        my ($name, $value) = split /=/, $pair, 2;
        $ENV{$name} = $value // '';
    }

    if ($one{watch} && !$probe) {
        if ($one{mark}) {
            my $dialect = $program[0] =~ m{(?:^|/)bash$} ? 'bash' : '';
            syswrite(STDERR, "\x1fkosmos-pgid $$ " . ($ENV{SHELL} // '') . " $dialect\n");
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
    exit first_text($one{read}, @program) if defined $one{read};

    if ($one{argv}) {
        my @words = split / /, $program[-1];
        my $path = plain($words[0]);
        exec { $path } @words if defined $path;
    }
    exec { $program[0] } @program;
    failed("exec $program[0]");
}

# serve=1 [PROBE]: stay, and start each command kosmos asks for, inside the lock,
# in a process group of its own, with /dev/null for stdin and one pipe for its output; that
# output and its exit status come back on stdout. One session of the host's sshd then carries
# all of a run's locked commands: each costs a fork, the lock's system calls and the exec.
# kosmos sends on stdin:
#
#   r ID LEN\n  then LEN bytes: SPEC\0PROGRAM\0ARG...   start command ID (main's arguments)
#   k ID\n      stop it: TERM to its group, a grace of a second or two, then KILL
#
# and reads on stdout `kosmos-serve 1\n` once, then
#
#   p ID PID\n                                command ID started: PID leads its group
#   o ID LEN\n  then LEN bytes                  what command ID printed
#   x ID CODE SIGNAL\n                         it ended and its output closed (or was dropped)
#
# Nothing left behind: a command's process is reaped only after the last signal to its group,
# so the group's number cannot be another's when that signal goes. Once a command has ended
# and its output closed, what is left of its group gets TERM, then KILL. At end-of-file on
# stdin (kosmos closed the session, or is gone: killed, the connection cut) every command
# still here is ended so, and this exits. It ignores the signals a group kill would send it.
# What leaves its command's group (a daemon) is ended too: see `strays` below.
my (%jobs, $eof, $subreaper);

sub put {    # to kosmos; a write that fails means kosmos is gone
    my ($text) = @_;
    while (!$eof && length $text) {
        my $n = syswrite(STDOUT, $text);
        if (!defined $n) { finish(); return }
        substr($text, 0, $n) = '';
    }
}

sub finish {    # kosmos is gone: every command is ended
    $eof = 1;
    stop($_) for keys %jobs;
}

sub stop {
    my ($id) = @_;
    my $job = $jobs{$id} or return;
    return if defined $job->{kill};
    kill 'TERM', -$job->{pid};
    $job->{kill} = time + 2;
}

sub start {
    my ($id, $payload) = @_;
    if (!defined $subreaper) {    # before the first command: the spec names prctl's number
        my ($prctl) = $payload =~ /\A(?:[^\0]* )?prctl=(\d+)/;
        $subreaper = $prctl && syscall(0 + $prctl, 36, 1, 0, 0, 0) == 0;    # PR_SET_CHILD_SUBREAPER
    }
    my ($out, $in);
    my $pid = pipe($out, $in) ? fork() : undef;
    if (!defined $pid) {
        my $why = "kosmos: the command could not be started ($!); it did not run\n";
        put('o ' . $id . ' ' . length($why) . "\n" . $why . "x $id 126 0\n");
        return;
    }
    if ($pid == 0) {
        setpgrp(0, 0);
        $SIG{$_} = 'DEFAULT' for qw(PIPE TERM INT HUP QUIT);
        close($out);
        open(STDIN, '<', '/dev/null') or failed('open /dev/null');
        open(STDOUT, '>&', $in) or failed('stdout');
        open(STDERR, '>&', $in) or failed('stderr');
        close($in);
        main(split /\0/, $payload, -1);
    }
    setpgrp($pid, $pid);    # before any signal to the group can be sent
    close($in);
    $jobs{$id} = { pid => $pid, out => $out };
    put("p $id $pid\n");
}

# The wait status of `pid` once it has ended, without reaping it; undef while it runs.
sub ended {
    my ($pid) = @_;
    # Without /proc, it is reaped to learn it.
    open(my $stat, '<', "/proc/$pid/stat") or return waitpid($pid, 1) > 0 ? $? : undef;
    my $line = <$stat>;
    $line =~ s/^.*\) //s;
    my @fields = split ' ', $line;
    return $fields[0] eq 'Z' ? 0 + $fields[49] : undef;
}

# A command's process that leaves its group (setsid, setpgid: a daemon) escapes the signals to
# the group. This server is the subreaper of all it starts (PR_SET_CHILD_SUBREAPER), so such a
# stray becomes its child once its parent is gone: once a command's own process has ended, each
# stray is ended at once, with its group, and reaped. What is still in the group of a command
# not yet ended is left to that command's end.
sub proc_stat {    # the state, parent and group of PID; () once it is gone
    open(my $stat, '<', "/proc/$_[0]/stat") or return ();
    my $line = <$stat> // return ();
    $line =~ s/^.*\) //s;
    return (split ' ', $line)[0, 1, 2];
}

sub strays {    # ends the strays among this server's children; true when there was one
    my %running = map { $_ => 1 } @_;    # the groups of the commands not yet ended
    my @children;
    if (open(my $list, '<', "/proc/$$/task/$$/children")) {
        @children = split ' ', (<$list> // '');
    } elsif (opendir(my $proc, '/proc')) {
        @children = grep { /^\d+$/ && ((proc_stat($_))[1] // 0) == $$ } readdir($proc);
    }
    my $found;
    for my $pid (grep { !$running{$_} } @children) {
        my ($state, undef, $group) = proc_stat($pid) or next;
        next if $running{$group} && $state ne 'Z';
        kill 'KILL', -$pid, $pid if $state ne 'Z';
        waitpid($pid, 0);
        $found = 1;
    }
    return $found;
}

sub serve {
    my (undef, $probing) = @_;
    $SIG{$_} = 'IGNORE' for qw(PIPE TERM INT HUP QUIT);
    my ($in, @left) = ('');
    # serve=1 PROBE: first the probe's line (probe=1 above), from a child: it locks itself.
    if (defined $probing) {
        my $pid = fork();
        main($probing) if defined $pid && $pid == 0;
        put("\n") unless defined $pid && waitpid($pid, 0) > 0 && $? == 0;
    }
    put("kosmos-serve 1\n");
    my $sweep = sub {
        my $rounds = 0;    # a stray ended leaves its children to this server: they are next
        1 while $subreaper && strays(map($_->{pid}, values %jobs), map($_->[0], @left))
          && ++$rounds < 20;
    };
    while (!$eof || %jobs || @left) {
        my $now = time;
        my ($poll, $ended);
        for my $id (keys %jobs) {
            my $job = $jobs{$id};
            if ($job->{kill} && $now >= $job->{kill}) {
                kill 'KILL', -$job->{pid};
                ($job->{kill}, $job->{drop}) = (0, $now + 2);
            }
            # What still holds the output open after the KILL is outside the group: the output
            # is not read on.
            $job->{out} = undef if $job->{drop} && $now >= $job->{drop};
            if ($job->{out}) {    # once a second, whether a stray holds it after the command
                next if $now < ($job->{look} // $now);
                $job->{look} = $now + 1;
                $ended = 1 if defined ended($job->{pid});
                next;
            }
            my $status = ended($job->{pid});
            if (!defined $status) { $poll = 1; next }
            put("x $id " . (($status >> 8) & 255) . ' ' . ($status & 127) . "\n");
            kill 'TERM', -$job->{pid};
            push @left, [$job->{pid}, $now + 2];
            delete $jobs{$id};
            $ended = 1;
        }
        @left = grep {
            my ($pid, $at) = @$_;
            # At kosmos's end, what the TERM at their end left gets no more time.
            ($now < $at && !$eof) or do { kill 'KILL', -$pid; waitpid($pid, 0); $ended = 1; 0 };
        } @left;
        $sweep->() if $ended;
        last if $eof && !%jobs && !@left;
        my $rin = '';
        vec($rin, 0, 1) = 1 unless $eof;
        vec($rin, fileno($_->{out}), 1) = 1 for grep { $_->{out} } values %jobs;
        my $timed = @left || grep { $_->{kill} || $_->{drop} } values %jobs;
        # A running command: woken once a second at least, for the look at its strays.
        my $wait = $poll ? 0.005 : $timed ? 0.25 : %jobs ? 1 : undef;
        my $rout = $rin;
        next if select($rout, undef, undef, $wait) <= 0;
        for my $id (keys %jobs) {
            my $job = $jobs{$id};
            next unless $job->{out} && vec($rout, fileno($job->{out}), 1);
            my $got = sysread($job->{out}, my $data, 65536);
            if ($got) { put("o $id $got\n$data") } else { $job->{out} = undef }
        }
        next unless vec($rout, 0, 1);
        if (!sysread(STDIN, $in, 65536, length $in)) { finish(); next }
        while (1) {
            if ($in =~ /\Ar (\d+) (\d+)\n/) {
                my ($id, $size, $at) = ($1, $2, $+[0]);
                last if length($in) < $at + $size;
                start($id, substr($in, $at, $size));
                substr($in, 0, $at + $size) = '';
            } elsif ($in =~ /\Ak (\d+)\n/) {
                stop($1);
                substr($in, 0, $+[0]) = '';
            } elsif ($in =~ /\n/ || length($in) > 64) {
                finish();    # not kosmos speaking: nothing more is started
                last;
            } else {
                last;
            }
        }
    }
    $sweep->();
    exit 0;
}

if (($ARGV[0] // '') eq 'serve=1') { serve(@ARGV) } else { main(@ARGV) }
