"""The keys that apply now, on one line at the bottom of a screen."""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


class Key(NamedTuple):
    key: str
    shown: str  # how the key is written (`^r`)
    description: str
    enabled: bool


class Keys(Widget):
    """What Textual's footer shows, drawn as one line by one widget.

    Textual's footer is a row of widgets built anew whenever the screen's bindings may have
    changed (each focus move, each `refresh_bindings`): each rebuild mounts and styles a
    dozen widgets and lays the whole screen out again. During a fleet run that happened
    dozens of times and cost a third of the screen's work. This one keeps the keys it shows,
    compares them with the screen's bindings when told they may have changed, and when they
    differ draws its one line again: no widget is mounted, nothing moves. A click on a key
    presses it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keys--key", "keys--description"}
    DEFAULT_CSS = """
    Keys {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .keys--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .keys--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.keys: tuple[Key, ...] = ()
        self._spans: list[tuple[int, int, Key]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        app = self.app
        active = screen.active_bindings
        keys: list[Key] = []
        actions: set[str] = set()
        for _, binding, enabled, _ in active.values():
            # One key for each action, as the footer shows it.
            if binding.show and binding.action not in actions:
                actions.add(binding.action)
                keys.append(
                    Key(binding.key, app.get_key_display(binding), binding.description, enabled)
                )
        palette = active.get(app.COMMAND_PALETTE_BINDING) if app.ENABLE_COMMAND_PALETTE else None
        if palette is not None:
            binding = palette.binding
            keys.append(
                Key(binding.key, app.get_key_display(binding), binding.description, palette.enabled)
            )
        if tuple(keys) != self.keys:
            self.keys = tuple(keys)
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("keys--key")
        description_style = self.get_component_rich_style("keys--description")
        line = Text(no_wrap=True, overflow="crop")
        self._spans = []
        for key in self.keys:
            start = line.cell_len
            line.append(f" {key.shown} ", key_style)
            if key.description:
                line.append(f"{key.description} ", description_style)
            if not key.enabled:
                line.stylize("dim", start)
            self._spans.append((start, line.cell_len, key))
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                if key.enabled:
                    self.app.simulate_key(key.key)
                else:
                    self.app.bell()
                return
