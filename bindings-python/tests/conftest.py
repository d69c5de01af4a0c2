import atexit
import os
import shutil
import tempfile

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
    {"role": "user", "content": "What is the capital of France?"},
]


@pytest.fixture(scope="session")
def client() -> ingle.OpenAI:
    # The default model from the models cache (scripts/fetch-models), loaded once per session.
    assert "INGLE_CONFIG" not in os.environ, "the tests use the default model"
    return ingle.OpenAI()
