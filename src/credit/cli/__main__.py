"""``python -m credit.cli``: the ``credit`` command."""

from credit.cli import main

main()
