"""Frameworks against `ingle serve`: the server's URL and key, and a record of each test's result
that render.py turns into docs/clients.md.

Each test is marked `@pytest.mark.client(framework, distribution, call)`; its row is the
framework's name, the version installed of its distribution (and of `openai`, which it drives),
the call, and how it went: passed, failed (with the error), or xfail (with why, and what the user
does instead). `inprocess=True` marks a test that gives the framework ingle's in-process client
(`ingle.OpenAI()`) instead of a server's URL: its row goes in a table of its own. Rows are
appended as JSON lines to $INGLE_CLIENTS_RESULTS when that is set."""

import json
import os
from importlib import metadata

import pytest

# LiteLLM fetches its price list from the network when imported, unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "client(framework, distribution, call, inprocess=False): a docs/clients.md row")


def pytest_collection_modifyitems(config, items):
    """$INGLE_CLIENTS_TIER (scripts/test-clients): `ci` keeps one call per framework and
    integration (the first, in file order, of each distribution, over a server and in-process,
    that is not a known failure), `extended` all the others, unset every test (docs/testing.md)."""
    tier = os.environ.get("INGLE_CLIENTS_TIER")
    if tier not in ("ci", "extended"):
        return
    seen, keep, drop = set(), [], []
    for item in items:
        mark = item.get_closest_marker("client")
        first = False
        if mark is not None and item.get_closest_marker("xfail") is None:
            key = (mark.args[1], bool(mark.kwargs.get("inprocess")))
            first = key not in seen
            seen.add(key)
        (keep if first == (tier == "ci") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def base_url():
    return os.environ["INGLE_SERVE_URL"]


@pytest.fixture(scope="session")
def api_key():
    return os.environ["INGLE_SERVE_KEY"]


def _version(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _row(item):
    mark = item.get_closest_marker("client")
    if mark is None:
        return None
    framework, dist, call = mark.args
    version = f"{dist} {_version(dist)}"
    if dist != "openai":
        version += f", openai {_version('openai')}"
    row = {"framework": framework, "version": version, "call": call, "test": item.nodeid}
    if mark.kwargs.get("inprocess"):
        row["client"] = "in-process"
        row["version"] += f", ingle {_version('ingle')}"
    return row


def _first_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    path = os.environ.get("INGLE_CLIENTS_RESULTS")
    row = _row(item)
    if not path or row is None:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if hasattr(report, "wasxfail"):
            row["result"] = "xpass" if report.passed else "xfail"
            row["reason"] = _first_line(report.wasxfail)
        elif report.skipped:
            row["result"] = "skipped"
            row["reason"] = _first_line(report.longrepr[2] if isinstance(report.longrepr, tuple)
                                        else report.longrepr)
        elif report.passed:
            row["result"] = "passed"
        else:
            error = call.excinfo.exconly() if call.excinfo else report.longreprtext
            row["result"] = "failed"
            row["reason"] = _first_line(error)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
