"""Modal screens: an unknown host key, a masked secret, quitting with a command running."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class HostKeyModal(ModalScreen[bool]):
    """Trust an unknown host key (it is then added to known_hosts) or cancel the connection."""

    BINDINGS = [
        Binding("t", "trust", "Trust"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, host: str, key_type: str, fingerprint: str) -> None:
        super().__init__()
        self.host = host
        self.key_type = key_type
        self.fingerprint = fingerprint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Unknown host key for {self.host}", classes="dialog-title", markup=False)
            yield Static(
                f"{self.key_type} key fingerprint:\n[b]{self.fingerprint}[/b]\n\n"
                "Check it with the host's administrator before trusting it.",
                id="fingerprint",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Trust", variant="warning", id="trust")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trust")

    def action_trust(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class SecretModal(ModalScreen["str | None"]):
    """A password or passphrase, typed masked; it goes to the caller only, never to a log."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.prompt, classes="dialog-title", markup=False)
            yield Input(password=True, id="secret", placeholder="typed characters are hidden")
            yield Static("enter: submit  ·  escape: cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#secret", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class QuitModal(ModalScreen[bool]):
    """Quitting while commands run stops them; ask first."""

    BINDINGS = [
        Binding("y", "quit", "Quit"),
        Binding("escape,n", "stay", "Stay"),
    ]

    def __init__(self, running: int) -> None:
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        what = "A command is" if self.running == 1 else f"{self.running} commands are"
        with Vertical(classes="dialog"):
            yield Label(f"{what} still running.", classes="dialog-title")
            yield Static("Quit anyway? Running commands are stopped (their process trees ended).")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Quit", variant="error", id="quit")
                yield Button("Stay", id="stay")

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit")

    def action_quit(self) -> None:
        self.dismiss(True)

    def action_stay(self) -> None:
        self.dismiss(False)
