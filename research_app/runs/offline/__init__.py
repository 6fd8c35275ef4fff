"""Offline research tasks: what the `offline` provider answers to the six tasks of a research run."""
