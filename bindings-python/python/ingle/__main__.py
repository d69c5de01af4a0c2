"""The ``ingle`` command the wheel installs (also ``python -m ingle``): models from ingle's
catalog, for a machine with the Python package and nothing else.

    ingle pull [TAG ...] [--all] [--quiet]   download and verify (default: the default chat model)
    ingle models [--json]                    the catalog: sizes, what is downloaded

The models directory is ``$INGLE_MODELS_DIR``, else ``~/.cache/ingle/models`` (``--models-dir``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from . import OpenAI, OpenAIError
from .types import PullProgress

DEFAULT_MODEL = "@local/smollm2-135m-instruct"


def _human(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


class _Line:
    """One progress line on a terminal (stderr), rewritten in place; nothing otherwise."""

    def __init__(self, quiet: bool) -> None:
        self.live = not quiet and sys.stderr.isatty()
        self.file: Optional[str] = None

    def __call__(self, event: PullProgress) -> None:
        if not self.live or event.file is None:
            return
        if self.file is not None and event.file != self.file:
            sys.stderr.write("\n")
        self.file = event.file
        percent = 100 * event.completed / event.total if event.total else 100
        verb = event.status if event.status in ("waiting", "verifying") else "pulling"
        sys.stderr.write(
            f"\r{verb:<9} {event.file:<40} {percent:5.1f}%  "
            f"{_human(event.completed)} / {_human(event.total)}\x1b[K"
        )
        sys.stderr.flush()

    def end(self) -> None:
        if self.live and self.file is not None:
            sys.stderr.write("\n")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="ingle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models-dir", help="where models are (default: $INGLE_MODELS_DIR or ~/.cache/ingle/models)")
    commands = parser.add_subparsers(dest="command", required=True)
    pull = commands.add_parser("pull", help="download models of the catalog, verified")
    pull.add_argument("tags", nargs="*", help=f"tags to pull (default: {DEFAULT_MODEL})")
    pull.add_argument("--all", action="store_true", help="every entry of the catalog")
    pull.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary")
    models = commands.add_parser("models", help="list the catalog: sizes, what is downloaded")
    models.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)

    try:
        client = OpenAI(models_dir=args.models_dir)
        catalog = client.models.catalog()
        if args.command == "models":
            if args.json:
                print(json.dumps(catalog, indent=2))
                return 0
            width = max(len(entry["tag"]) for entry in catalog)
            print(f"{'TAG':<{width}}  {'KIND':<13}  {'SIZE':>9}  STATUS")
            for entry in catalog:
                status = "downloaded" if entry["cached"] else f"not downloaded: ingle pull {entry['tag']}"
                print(f"{entry['tag']:<{width}}  {entry['kind']:<13}  {_human(entry['size']):>9}  {status}")
            return 0
        if args.all and args.tags:
            parser.error("give tags or --all, not both")
        tags = [entry["tag"] for entry in catalog] if args.all else (args.tags or [DEFAULT_MODEL])
        for tag in tags:
            line = _Line(args.quiet)
            try:
                result = client.models.pull(tag, progress=line)
            finally:
                line.end()
            if not args.quiet:
                size = sum(f.size for f in result.files)
                if any(f.fetched for f in result.files):
                    print(f"pulled {tag}: {_human(size)} ({_human(result.downloaded_bytes)} downloaded), "
                          f"verified, in {result.models_dir}")
                else:
                    print(f"{tag} is up to date: {_human(size)}, verified, in {result.models_dir}")
        return 0
    except OpenAIError as e:
        print(f"ingle: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ingle: stopped (pulling again resumes)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
