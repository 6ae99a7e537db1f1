"""memdream/interrupts.py: what counts as an interrupted command (the process-level behaviour, Ctrl-C at any
moment, is tested with real processes in tests/cli/test_command_line.py)."""

from __future__ import annotations

from memdream.interrupts import interrupted, launched_as_command_line


def test_a_keyboard_interrupt_turned_into_another_error_is_an_interruption() -> None:
    """Python turns a KeyboardInterrupt in a descriptor's ``__set_name__`` (a dataclass field, while a module
    a command needs is imported) into a RuntimeError: that is Ctrl-C, not an internal error."""
    try:
        class Holder:
            class Field:
                def __set_name__(self, owner: type, name: str) -> None:
                    raise KeyboardInterrupt

            offsets = Field()
    except RuntimeError as error:
        assert interrupted(error)
    else:  # pragma: no cover - Python always wraps it
        raise AssertionError("no RuntimeError")
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("while cleaning up") from None
    except OSError as error:
        assert interrupted(error)  # the context is kept though the cause is suppressed
    assert not interrupted(ValueError("a bug"))


def test_the_test_process_is_not_the_command_line() -> None:
    """Importing memdream (a test, an MCP host) leaves Ctrl-C to the host."""
    assert not launched_as_command_line()
