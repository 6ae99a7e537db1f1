"""memdream: long-term memory for AI agents, consolidated offline into cards they can trust."""

from memdream.interrupts import install_at_start

__version__ = "0.1.0"

install_at_start()  # first: Ctrl-C while the command line starts is one line (memdream/interrupts.py)
