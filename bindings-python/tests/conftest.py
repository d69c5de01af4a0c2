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


def qwen_gguf() -> str:
    """The Qwen2.5-Coder-0.5B GGUF of the models cache (scripts/setup --tests fetches it), for
    tests that give it another family's chat template. Missing, the test fails: it is no skip."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    models = os.environ.get("INGLE_MODELS_DIR") or os.path.join(cache, "ingle", "models")
    path = os.path.join(models, "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf")
    assert os.path.exists(path), f"{path} is missing: run `ingle pull qwen2.5-coder-0.5b-instruct`"
    return path


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
