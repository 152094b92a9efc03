"""The output tail: what the run view writes of a stream, however big or fast."""

from __future__ import annotations

from kosmos.tui.output import OutputTail


def test_feed_reports_the_first_chunk_of_a_burst() -> None:
    tail = OutputTail()
    assert tail.feed("a\n") is True
    assert tail.feed("b\n") is False
    assert tail.take() == "a\nb\n"
    assert tail.take() == ""
    assert tail.feed("c") is True


def test_a_flood_keeps_only_the_newest_text() -> None:
    tail = OutputTail(max_pending=1000)
    for i in range(10_000):
        tail.feed(f"line {i}\n")
    text = tail.take()
    assert len(text) <= 2000
    assert text.endswith("line 9999\n")
    assert tail.dropped > 50_000 and tail.total == sum(len(f"line {i}\n") for i in range(10_000))


def test_long_lines_are_cut_once_across_chunks() -> None:
    tail = OutputTail(max_width=10)
    tail.feed("x" * 8)
    first = tail.take()
    tail.feed("y" * 50)
    second = tail.take()
    tail.feed("z" * 5 + "\nshort\n")
    third = tail.take()
    assert first == "x" * 8
    assert second == "yy…"
    assert third == "\nshort\n"
