import os

import pytest

import ingle

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
