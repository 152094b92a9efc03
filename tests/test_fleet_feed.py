"""The fleet screen's record of each host (`HostFeed`): an ended host's story, kept packed
against the fleet's first, comes back whole."""

from __future__ import annotations

import pickle
import zlib

from kosmos.events import (
    CommandFinished,
    CommandOutput,
    CommandStarted,
    Event,
    RunFinished,
    RunStarted,
)
from kosmos.tui.fleet_feed import HostFeed, Packer
from kosmos.tui.fleet_wire import told

# What every host of a fleet is told alike (a system prompt, say), and then its own part.
SHARED = "You are a careful operator of Linux servers. " * 60


def story(host: str) -> list[Event]:
    return [
        RunStarted(
            host=host,
            run_id=f"run-{host}",
            skill="three",
            skill_path="/s",
            model="m",
            base_url="http://llm",
            max_steps=20,
        ),
        CommandStarted(host=host, step=1, command="hostname"),
        CommandOutput(host=host, step=1, text=f"{host}.example\n"),
        CommandFinished(
            host=host,
            step=1,
            command="hostname",
            exit_code=0,
            duration_s=0.1,
            bytes=12,
            output=f"{host}.example\n",
            sent_to_llm=f"{host}.example\n",
        ),
        RunFinished(host=host, status="done", steps=1, message=SHARED + host, exit_code=0),
    ]


def test_ended_stories_pack_against_the_first_and_come_back_whole() -> None:
    packer = Packer()
    feeds = [HostFeed(f"h{i:03}", packer) for i in range(20)]
    for feed in feeds:
        for event in story(feed.name):
            feed.take(told(event))
    for feed in feeds:
        events = feed.events
        assert [e.type for e in events] == [
            "run_started",
            "command_started",
            "command_finished",
            "result",
        ]
        assert all(e.host == feed.name for e in events)
        assert isinstance(events[-1], RunFinished) and events[-1].message == SHARED + feed.name
        # Its output was kept beside the story, packed with it.
        assert feed._stored()[1] == {1: f"{feed.name}.example\n"}
    # Each story after the first packs to a fraction of what it packs to alone.
    alone = len(zlib.compress(packer.unpack(feeds[5]._packed)))
    assert len(feeds[5]._packed) * 3 < alone


def test_a_story_that_goes_on_after_its_end_is_unpacked_and_packed_again() -> None:
    packer = Packer()
    first, retried = HostFeed("a", packer), HostFeed("b", packer)
    for event in story("a"):
        first.take(told(event))
    for event in story("b"):
        retried.take(told(event))
    assert retried._packed
    # A retry: the same host's run again, after its first end.
    for event in story("b"):
        retried.take(told(event))
    assert retried._packed  # ended again: packed again
    assert [e.type for e in retried.events].count("result") == 2
    assert [e.type for e in first.events].count("result") == 1


def test_a_short_first_story_does_not_leave_the_rest_without_a_dictionary() -> None:
    # The first host to end could not be reached: its story is short.
    packer = Packer()
    dead = HostFeed("dead", packer)
    for event in [
        story("dead")[0],
        RunFinished(host="dead", status="error", steps=0, message="refused", exit_code=6),
    ]:
        dead.take(told(event))
    feeds = [HostFeed(f"h{i:03}", packer) for i in range(10)]
    for feed in feeds:
        for event in story(feed.name):
            feed.take(told(event))

    # The first full story became the dictionary: the others pack as small as they would
    # behind it, and every story, the short one too, comes back whole.
    def data(feed: HostFeed) -> bytes:
        return pickle.dumps(feed._stored())

    behind_a_full_one = Packer()
    behind_a_full_one.pack(data(feeds[0]))
    assert len(feeds[5]._packed) <= len(behind_a_full_one.pack(data(feeds[5])))
    assert len(feeds[5]._packed) * 3 < len(zlib.compress(data(feeds[5])))
    assert [e.type for e in dead.events] == ["run_started", "result"]
    assert all(feed.events[-1].host == feed.name for feed in feeds)
