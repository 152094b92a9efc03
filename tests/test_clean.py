"""kosmos.clean: terminal output as a person reads it on screen, then capped."""

from __future__ import annotations

import pytest

from kosmos.clean import _BLOCK, cap, clean, default_marker

ESC = "\x1b"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # SGR colours, 16/256/truecolour, reset without parameters
        (f"{ESC}[31mred{ESC}[0m plain", "red plain"),
        (f"{ESC}[1;38;5;208morange{ESC}[m", "orange"),
        (f"{ESC}[38;2;249;38;114mpink{ESC}[39;49m!", "pink!"),
        # cursor movement and screen control
        (f"{ESC}[2J{ESC}[Htop{ESC}[10;5Hleft{ESC}[3Aup", "topleftup"),
        (f"{ESC}[s saved{ESC}[u", " saved"),
        # private modes: cursor hide/show, bracketed paste, alternate screen
        (f"{ESC}[?25lbusy{ESC}[?25h", "busy"),
        (f"{ESC}[?2004h{ESC}[?1049hscreen{ESC}[?1049l", "screen"),
        # OSC ended by BEL and by ST: window title, hyperlink, cwd report
        (f"{ESC}]0;user@host: ~\x07after title", "after title"),
        (f"{ESC}]8;;https://example.com{ESC}\\link{ESC}]8;;{ESC}\\ text", "link text"),
        (f"{ESC}]7;file://host/tmp{ESC}\\cwd", "cwd"),
        # DCS, APC, PM, SOS strings
        (f"{ESC}Pq#0;2;0;0;0~-{ESC}\\after sixel", "after sixel"),
        (f"{ESC}_Gf=100;AAAA{ESC}\\kitty", "kitty"),
        (f"{ESC}^private{ESC}\\ pm", " pm"),
        (f"{ESC}Xsos{ESC}\\s", "s"),
        # charset designations and keypad modes
        (f"{ESC}(Bascii{ESC})0{ESC}(0lqk{ESC}(B", "asciilqk"),
        (f"{ESC}*A{ESC}+Bsets", "sets"),
        (f"{ESC}=keypad{ESC}>", "keypad"),
        # other two-byte escapes: save/restore cursor, reverse index, reset
        (f"{ESC}7saved{ESC}8{ESC}M{ESC}c{ESC}Dd", "savedd"),
        # 8-bit C1 forms
        ("\x9b31mred\x9b0m", "red"),
        ("\x9d0;title\x07after\x9dx\x9c!", "after!"),
        ("a\x85b\x84c", "abc"),
        # unterminated sequences: an OSC stops at its line end, a cut-off CSI or bare ESC goes
        (f"{ESC}]0;never ended\nnext line", "next line"),
        (f"cut{ESC}[", "cut"),
        (f"end{ESC}", "end"),
        # C0 controls dropped, TAB kept
        ("a\x00b\x07c\x0e\x0fd\x7fe\x1cf", "abcdef"),
        ("col1\tcol2", "col1\tcol2"),
    ],
)
def test_escapes_and_controls_are_stripped(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("abc\rX", "Xbc"),
        ("abc\r\nnext", "abc\nnext"),
        ("abc\r\r\nnext", "abc\nnext"),
        ("line\r", "line"),
        (" 10%\r 50%\r100%", "100%"),
        ("long text\rshort", "shorttext"),
        ("abc\bX", "abX"),
        ("_\bX_\bY", "XY"),  # nroff underline
        ("B\bBo\bol\bld\bd", "Bold"),  # nroff bold
        ("\b\bX", "X"),  # backspace stops at column 0
        ("ab\b\b\bcd", "cd"),
        # erase in line: to the end, from the start, the whole line
        (f"abcdef\r{ESC}[Kxy", "xy"),
        (f"abcdef\r{ESC}[0Kxy", "xy"),
        (f"abcdef{ESC}[3D{ESC}[1Kz", "   zef"),
        (f"abcdef{ESC}[2Kz", "      z"),
        (f"abcdef{ESC}[2K\rz", "z"),
        (f"grep {ESC}[01;31m{ESC}[Kmatch{ESC}[m{ESC}[K here", "grep match here"),
        # cursor to column, forward, back
        (f"abcdef{ESC}[1GX", "Xbcdef"),
        (f"abcdef{ESC}[GX", "Xbcdef"),
        (f"abcdef{ESC}[4GX", "abcXef"),
        (f"a{ESC}[3Cb", "a   b"),
        (f"abc{ESC}[2DX", "aXc"),
        # a final state of only spaces is blank
        (f"working...\r{ESC}[K\n", ""),
        ("abc\r   ", ""),
        # colours inside an overwritten line do not count as columns
        (f"{ESC}[32mold text{ESC}[0m\r{ESC}[1mnew{ESC}[0m", "new text"),
        ("x\rá", "á"),  # columns are characters, not UTF-8 bytes
        ("ééé\rá", "áéé"),
    ],
)
def test_overwrites_show_as_on_a_terminal(raw: str, expected: str) -> None:
    assert clean(raw) == expected


def test_pip_progress_bar_keeps_its_last_frame() -> None:
    frames = [
        f"   {ESC}[38;2;249;38;114m{'━' * n}{ESC}[0m{ESC}[38;5;237m{'━' * (10 - n)}{ESC}[0m"
        f" {ESC}[32m{n}.0/10.0 MB{ESC}[0m"
        for n in range(11)
    ]
    raw = f"Collecting numpy\n{ESC}[?25l" + f"\r{ESC}[K".join(frames) + f"{ESC}[?25h\nDone\n"
    assert clean(raw) == f"Collecting numpy\n   {'━' * 10} 10.0/10.0 MB\nDone"


def test_curl_progress_meter_keeps_its_last_frame() -> None:
    frames = [f"\r{p:3d}  120M  {p:3d} {p}.0M    0     0  10.2M      0" for p in (0, 45, 100)]
    raw = "  % Total    % Received\n" + "".join(frames) + "\n"
    assert clean(raw) == "  % Total    % Received\n100  120M  100 100.0M    0     0  10.2M      0"


def test_apt_progress_drawn_at_the_bottom_is_replaced_by_the_next_line() -> None:
    bar = "".join(
        f"\r{ESC}7{ESC}[24;0f{ESC}[42m{ESC}[30mProgress: [{p:3d}%]{ESC}[49m{ESC}[39m "
        f"[{'#' * (p // 10)}{'.' * (10 - p // 10)}]{ESC}8"
        for p in (10, 60, 90)
    )
    raw = f"Unpacking libssl3 ...{bar}\r{ESC}[KSetting up libssl3 ...\n"
    assert clean(raw) == "Setting up libssl3 ..."


def test_wget_bar_with_shrinking_frames_keeps_what_the_screen_shows() -> None:
    raw = "file.tar.gz  10%[>    ] 1.0M  eta 90s\rfile.tar.gz 100%[=====] 10.0M in 2s\n"
    assert clean(raw) == "file.tar.gz 100%[=====] 10.0M in 2s0s"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"ok \xff\xfe end", "ok \ufffd\ufffd end"),
        (b"cut \xe2\x94", "cut \ufffd"),
        (b"\xc3\xa9t\xc3\xa9", "été"),
        (b"\x1b[31m\xe2\x94\x81\x1b[0m", "━"),
    ],
)
def test_bytes_are_decoded_with_replacement(raw: bytes, expected: str) -> None:
    assert clean(raw) == expected


def test_str_and_bytes_inputs_agree() -> None:
    raw = f"{ESC}[1mhead{ESC}[0m\r\nnaïve\rN\n\n  \n x\n x\n"
    assert (
        clean(raw)
        == clean(raw.encode())
        == clean(bytearray(raw.encode()))
        == "head\nNaïve\n x [repeated 2 times]"
    )


def test_blank_lines_and_trailing_whitespace_go_leading_whitespace_stays() -> None:
    raw = "\n\n  \t \nfirst   \n\n\n M modified.py\n?? new.py\t\n   indented\n \u00a0\u3000\n\n"
    assert clean(raw) == "first\n M modified.py\n?? new.py\n   indented"


def test_unicode_spaces_at_line_end_are_stripped() -> None:
    assert clean("price\u00a0\nwide\u3000\u2003\nkeep\u00a0it") == "price\nwide\nkeep\u00a0it"


def test_adjacent_repeats_collapse_with_their_count() -> None:
    raw = "start\n" + "retrying...\n" * 5 + "ok\nretrying...\nok\nend\nend\n"
    assert clean(raw) == (
        "start\nretrying... [repeated 5 times]\nok\nretrying...\nok\nend [repeated 2 times]"
    )


def test_repeats_compare_what_is_shown_not_the_raw_bytes() -> None:
    raw = f"{ESC}[32mok{ESC}[0m\nok   \n{ESC}[1mok\r\n"
    assert clean(raw) == "ok [repeated 3 times]"


def test_a_run_crossing_a_block_boundary_is_one_run() -> None:
    filler = "x" * 99 + "\n"
    raw = filler * (_BLOCK // 100 - 2) + "same\n" * 10 + "tail\n"
    out = clean(raw)
    assert out.endswith("\nsame [repeated 10 times]\ntail")
    assert out.count("same") == 1


def test_a_progress_line_longer_than_a_block_is_rendered_whole() -> None:
    frames = [f"{done:>6} of 99999 files" for done in range(0, 100_000, 7)]
    raw = "start\n" + "\r".join(frames) + "\nend\n"
    assert len(raw) > 2 * _BLOCK
    assert clean(raw) == "start\n 99995 of 99999 files\nend"


def test_large_input_matches_line_by_line_cleaning() -> None:
    line = f"{ESC}[2m12:00{ESC}[0m {ESC}[32mINFO{ESC}[0m worker {{}} done\r\n"
    raw = "".join(line.format(i) for i in range(3 * _BLOCK // 40))
    out = clean(raw).split("\n")
    assert out == [f"12:00 INFO worker {i} done" for i in range(3 * _BLOCK // 40)]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("user@host:~$ ls -la\ntotal 0", "ls -la\ntotal 0"),
        ("root@web-01:/var/log# tail -n 2 syslog", "tail -n 2 syslog"),
        ("deploy@ci.example.org:~/app$ \noutput", "output"),
        ("user@host:~$\noutput", "output"),
        ("[ops@db1 ~]$ uptime\n 10:00 up 3 days", "uptime\n 10:00 up 3 days"),
        (
            f"{ESC}[01;32muser@host{ESC}[00m:{ESC}[01;34m~{ESC}[00m$ whoami\nuser",
            "whoami\nuser",
        ),
        ("C:\\Users\\admin> dir\r\n Volume in drive C", "dir\n Volume in drive C"),
        ("C:\\> \r\n", ""),
        ("C:\\Program Files\\App>app.exe --version", "app.exe --version"),
        ("PS C:\\Users\\admin> Get-Service sshd", "Get-Service sshd"),
        (
            "Microsoft Windows [Version 10.0.19045.3803]\r\n"
            "(c) Microsoft Corporation. All rights reserved.\r\n\r\nC:\\Users\\admin>whoami\r\n"
            "host\\admin\r\n",
            "whoami\nhost\\admin",
        ),
        ("Copyright (c) Microsoft Corporation. All rights reserved.\nok", "ok"),
    ],
)
def test_prompts_and_windows_banners_are_stripped(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    "line",
    [
        "Contact bob@example.com: he knows",
        "bob@example.com: $5 paid",
        "git@github.com:kosmos/kosmos.git",
        "  user@host:~$ indented, so not a prompt",
        "mail user@host:~$ inside a sentence",
        "result: C:\\temp> is where it went",
        "The Microsoft Windows [Version 10] banner, quoted",
        "x@y:z$w",
    ],
)
def test_ordinary_output_that_looks_like_a_prompt_is_kept(line: str) -> None:
    assert clean(line) == line


def test_nothing_left_gives_an_empty_string() -> None:
    assert clean("") == ""
    assert clean(b"") == ""
    assert clean(f"\n \n{ESC}[0m\n\r\n{ESC}]0;t\x07") == ""


def test_output_has_no_trailing_newline() -> None:
    assert clean("a\nb\n\n") == "a\nb"


# cap


def _marker_counts(result: str) -> tuple[int, int]:
    marker = next(line for line in result.split("\n") if line.startswith("[... "))
    lines, _, rest = marker.removeprefix("[... ").partition(" lines (")
    return int(lines), int(rest.partition(" bytes)")[0])


def test_text_within_limits_is_untouched() -> None:
    text = "\n".join(f"line {i}" for i in range(256))
    assert cap(text) == (text, False)
    assert cap("é" * 5120) == ("é" * 5120, False)  # exactly 10 KiB
    assert cap("") == ("", False)


def test_over_the_line_limit_keeps_head_and_tail() -> None:
    lines = [f"line {i}" for i in range(1000)]
    result, cut = cap("\n".join(lines), max_lines=11)
    out = result.split("\n")
    assert cut
    assert len(out) == 11
    assert out[:5] == lines[:5]
    assert out[6:] == lines[-5:]
    omitted = lines[5:-5]
    assert out[5] == default_marker(len(omitted), len("\n".join(omitted)))


def test_over_the_byte_limit_keeps_whole_lines_within_it() -> None:
    lines = [f"{i:04d} " + "x" * 95 for i in range(200)]  # 100 bytes each
    text = "\n".join(lines)
    result, cut = cap(text, max_bytes=2000)
    assert cut
    assert len(result.encode()) <= 2000
    out = result.split("\n")
    marker_at = next(i for i, line in enumerate(out) if line.startswith("[... "))
    head, tail = out[:marker_at], out[marker_at + 1 :]
    assert head == lines[: len(head)] and tail == lines[len(lines) - len(tail) :]
    assert len(head) >= 8 and len(tail) >= 8  # roughly half the budget each
    omitted = lines[len(head) : len(lines) - len(tail)]
    assert _marker_counts(result) == (len(omitted), len("\n".join(omitted).encode()))


@pytest.mark.parametrize(("max_bytes", "max_lines"), [(300, 256), (10 * 1024, 7), (150, 3)])
def test_marker_accounts_for_exactly_what_was_left_out(max_bytes: int, max_lines: int) -> None:
    lines = [f"{i}:" + "ü" * (i % 17) for i in range(500)]
    text = "\n".join(lines)
    result, cut = cap(text, max_bytes=max_bytes, max_lines=max_lines)
    assert cut
    assert len(result.encode()) <= max_bytes
    assert result.count("\n") + 1 <= max_lines
    out = result.split("\n")
    marker_at = next(i for i, line in enumerate(out) if line.startswith("[... "))
    kept = len(out) - 1
    omitted_lines, omitted_bytes = _marker_counts(result)
    assert omitted_lines + kept == len(lines)
    head, tail = out[:marker_at], out[marker_at + 1 :]
    middle = text[len("\n".join(head)) + 1 : len(text) - len("\n".join(tail)) - 1]
    assert "\n".join([*head, middle, *tail]) == text
    assert omitted_bytes == len(middle.encode())


def test_a_single_huge_line_is_cut_in_the_middle() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(100_000))
    result, cut = cap(text)
    assert cut
    assert len(result.encode()) <= 10 * 1024
    head, marker, tail = result.split("\n")
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) > 4000 and len(tail) > 4000
    assert marker == default_marker(0, len(text) - len(head) - len(tail))


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_multibyte_characters_are_never_split_at_the_cut(char: str) -> None:
    text = "ab" + char * 20_000
    result, cut = cap(text, max_bytes=1001)
    assert cut
    assert len(result.encode()) <= 1001
    head, marker, tail = result.split("\n")
    assert "\ufffd" not in result
    assert text.startswith(head) and text.endswith(tail)
    omitted = text[len(head) : len(text) - len(tail)]
    assert marker == default_marker(0, len(omitted.encode()))


def test_a_huge_first_line_is_cut_and_later_lines_stay_whole() -> None:
    lines = ["x" * 50_000, "second", "third"]
    result, _ = cap("\n".join(lines), max_bytes=1000)
    out = result.split("\n")
    assert out[-2:] == ["second", "third"]
    assert lines[0].startswith(out[0]) and 0 < len(out[0]) < 1000
    omitted = lines[0][len(out[0]) :]
    assert out[1] == default_marker(0, len(omitted))


def test_a_custom_marker_is_used_and_fits() -> None:
    result, cut = cap(
        "\n".join(map(str, range(100))),
        max_lines=5,
        marker=lambda lines, nbytes: f"<<{lines} more lines, {nbytes} B, see the transcript>>",
    )
    assert cut
    omitted = "\n".join(map(str, range(2, 98)))
    assert result.split("\n") == [
        "0",
        "1",
        f"<<96 more lines, {len(omitted)} B, see the transcript>>",
        "98",
        "99",
    ]


def test_a_limit_too_small_for_the_marker_is_an_error() -> None:
    with pytest.raises(ValueError, match="max_bytes=10"):
        cap("x" * 100, max_bytes=10)
    with pytest.raises(ValueError, match="max_lines=0"):
        cap("a\nb", max_lines=0)


def test_max_lines_one_leaves_only_the_marker() -> None:
    assert cap("a\nb\nc", max_lines=1) == (default_marker(3, 5), True)
