"""``python -m sink.cli``: the same entry point as the ``delivery`` script."""

from sink.cli import script

script()
