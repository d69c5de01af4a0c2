import atexit
import os
import shutil
import tempfile
import time

import pytest

import ingle

# Stored responses go to a store of this run (test_responses.py writes a 1,000-turn chain),
# not the user's ~/.local/share/ingle/responses.sqlite3.
_STORE = tempfile.mkdtemp(prefix="ingle-python-tests-")
atexit.register(shutil.rmtree, _STORE, True)
os.environ["INGLE_RESPONSES_STORE"] = os.path.join(_STORE, "responses.sqlite3")

MODEL = "@local/smollm2-135m-instruct"
FRANCE = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Name the capital of France."},
]


@pytest.fixture(scope="session")
def client() -> ingle.OpenAI:
    # The default model from the models cache (scripts/fetch-models), loaded once per session.
    assert "INGLE_CONFIG" not in os.environ, "the tests use the default model"
    return ingle.OpenAI()


def wait_idle(client, timeout=10.0):
    """Waits until the model has no running request (cancellation is asynchronous)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metrics = client.metrics(MODEL)
        if metrics["active_requests"] == 0 and metrics["queued_requests"] == 0:
            return metrics
        time.sleep(0.01)
    raise AssertionError(f"still busy: {client.metrics(MODEL)}")
