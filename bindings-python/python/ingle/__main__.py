"""The ``ingle`` command the wheel installs (also ``python -m ingle``): the same command as the
``ingle`` binary, run by the same Rust implementation through the native module (``ingle
--help`` lists its commands: ``pull``, ``models``, ``chat``, ``serve``, ``transcribe`` ...).
"""

from __future__ import annotations

import signal
import sys
from typing import List, Optional

from . import _ingle


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # The command runs without the GIL, where Python's own Ctrl-C handler never runs: Ctrl-C
    # does what it does to the binary (stops the process; a pull resumes next time).
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    try:
        return _ingle.run_command(["ingle", *args])
    finally:
        if previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
