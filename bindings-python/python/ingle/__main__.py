"""The ``ingle`` command the wheel installs (also ``python -m ingle``): the same command as the
``ingle`` binary, run by the same Rust implementation through the native module (``ingle
--help`` lists its commands: ``pull``, ``models``, ``chat``, ``serve``, ``transcribe`` ...).
Ctrl-C stops it as it stops the binary (a pull resumes next time).
"""

from __future__ import annotations

import sys
from typing import List, Optional

from . import _ingle


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    sys.stdout.flush()
    sys.stderr.flush()
    # Each argument goes back to the bytes the OS gave (a file name that is not UTF-8 too).
    return _ingle.run_command(["ingle", *args])


if __name__ == "__main__":
    sys.exit(main())
