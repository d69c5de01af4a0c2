"""Misuses ingle's types must refuse: scripts/test-python runs ``mypy --strict`` on this file
and requires it to fail with exactly the errors marked ``# expect: [code]``, each on its line
(and no other), so that types decayed to ``Any`` (which accept anything) fail the check.
Never run."""

from __future__ import annotations

from typing import Iterator, List

import ingle
from ingle.types import ChatCompletion, ChatCompletionMessageParam

MODEL = "@local/smollm2-135m-instruct"
MESSAGES: List[ChatCompletionMessageParam] = [{"role": "user", "content": "Hi"}]


def echo(messages: List[ChatCompletionMessageParam]) -> Iterator[str]:
    yield "not decorated with @ingle.predictor"


def misuse(client: ingle.OpenAI) -> None:
    completion = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    completion.choices[0].message.content.upper()  # expect: [union-attr]
    completion.choices[0].message.contnet  # expect: [attr-defined]
    tokens: int = completion.choices[0].message.content  # expect: [assignment]
    client.chat.completions.create(model=MODEL, messages=MESSAGES, stream="yes")  # expect: [call-overload]
    client.detokenize(model=MODEL, tokens=client.tokenize(model=MODEL, content="Hi", with_pieces=True).tokens)  # expect: [arg-type]
    client.tokenize(model=MODEL)  # expect: [call-overload]
    loaded: str = client.models.unload(MODEL)  # expect: [assignment]
    ingle.OpenAI(predictors=[echo])  # expect: [list-item]


async def misuse_async(client: ingle.AsyncOpenAI) -> None:
    client.models.list()  # expect: [unused-coroutine]
    whole: ChatCompletion = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)  # expect: [assignment]
