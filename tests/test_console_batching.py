"""A fleet's event log: lines said together reach the stream in one write, in order, and
never after a prompt or an error that follows them."""

from __future__ import annotations

import asyncio
import io

from kosmos.frontends.console import Console


class Writes(io.StringIO):
    """A stream that keeps each write apart, as a pipe sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


async def test_lines_said_in_one_pass_are_one_write_at_its_end() -> None:
    out, err = Writes(), Writes()
    console = Console(out=out, err=err, color=False)
    for i in range(100):
        console.say_soon(f"h{i:03d}  [1] $ true")
    assert out.writes == []  # held until the pass ends
    await asyncio.sleep(0)  # the pass ends: one turn of the loop, no more
    assert out.writes == ["".join(f"h{i:03d}  [1] $ true\n" for i in range(100))]
    console.say_soon("h000  ■ done")
    await asyncio.sleep(0)
    assert out.writes[1:] == ["h000  ■ done\n"]


async def test_other_output_first_writes_out_the_lines_held() -> None:
    out, err = Writes(), Writes()
    console = Console(out=out, err=err, color=False)
    console.say_soon("h001  [1] $ uptime")
    console.say("summary")
    assert out.getvalue() == "h001  [1] $ uptime\nsummary\n"
    console.say_soon("h002  [1] $ uptime")
    console.error("h002: unreachable")  # another stream: the held line goes out first
    assert out.getvalue().endswith("h002  [1] $ uptime\n") and err.getvalue()
    await asyncio.sleep(0)
    assert out.getvalue().count("h002") == 1


def test_without_an_event_loop_a_line_goes_out_at_once() -> None:
    out = Writes()
    Console(out=out, err=Writes(), color=False).say_soon("h000  ■ done")
    assert out.getvalue() == "h000  ■ done\n"
