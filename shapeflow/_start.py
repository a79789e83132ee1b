"""The console script and ``python -m shapeflow``: start the command line, and end quietly when
Ctrl-C comes while it is still being imported (before ``cli.main`` can map it to exit 130).

Kept apart from ``cli`` so that the first import the script makes is this small module, not click.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command Ctrl-C ended


def run() -> NoReturn:
    try:
        from .cli import run as run_cli
    except KeyboardInterrupt:
        try:
            sys.stderr.write("aborted\n")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os._exit(EXIT_INTERRUPTED)
    run_cli()
