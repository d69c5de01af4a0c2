"""Tool calls, structured output, logprobs and n on `ingle serve` through the official `openai`
package: the cases shared with the Python package (tests/python_shared/tools_cases.py)."""

import os
import pathlib
import sys

import openai
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python_shared"))
import tools_cases  # noqa: E402

CASES = [name for name in dir(tools_cases) if name.startswith("case_")]


@pytest.fixture(scope="module")
def client():
    return openai.OpenAI(base_url=os.environ["INGLE_SERVE_URL"],
                         api_key=os.environ["INGLE_SERVE_KEY"], max_retries=0)


@pytest.mark.parametrize("case", CASES)
def test_case(client, case):
    getattr(tools_cases, case)(client)
