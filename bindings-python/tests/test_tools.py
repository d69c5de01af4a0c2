"""Tool calls, structured output, logprobs and n on the ingle Python package: the cases shared
with `ingle serve` (tests/python_shared/tools_cases.py)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python_shared"))
import tools_cases  # noqa: E402

CASES = [name for name in dir(tools_cases) if name.startswith("case_")]


@pytest.mark.parametrize("case", CASES)
def test_case(client, case):
    getattr(tools_cases, case)(client)


def test_json_schema_outputs_validate_streamed(client):
    tools_cases.case_json_schema_outputs_validate(client, stream=True)


async def _parse_async():
    import ingle

    client = ingle.AsyncOpenAI()
    reply = await client.chat.completions.parse(
        model=tools_cases.QWEN, messages=[{"role": "user", "content": "Tell me about Paris."}],
        temperature=0, max_tokens=200, response_format=tools_cases.City)
    return reply.choices[0].message.parsed


def test_async_parse():
    import asyncio

    assert isinstance(asyncio.run(_parse_async()), tools_cases.City)
