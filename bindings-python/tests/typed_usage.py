"""A user's program, typed as a user writes it: scripts/test-python checks it with
``mypy --strict`` against the installed wheel. Each value read from ingle leaves a function
that declares its type, so a call whose type decayed to ``Any`` fails the check ("Returning
Any"); typed_usage_errors.py holds the misuses the types must refuse. Only type-checked, never
run (pytest collects ``test_*.py`` only): what the calls return at runtime the tests check."""

from __future__ import annotations

import asyncio
from typing import Iterator, List, Optional, Tuple, Union

import ingle
from ingle.types import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    CreateEmbeddingResponse,
    TokenizeResponse,
)

MODEL = "@local/smollm2-135m-instruct"
EMBEDDER = "@local/all-minilm-l6-v2"
MESSAGES: List[ChatCompletionMessageParam] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Name the capital of France."},
]


@ingle.predictor(tag="@me/shout")
def shout(messages: List[ChatCompletionMessageParam]) -> Iterator[str]:
    """A chat predictor of the user's own: the last message, shouted word by word."""
    for word in messages[-1]["content"].split():
        yield word.upper() + " "


def ask(client: ingle.OpenAI, question: str) -> ChatCompletion:
    return client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}], max_tokens=16
    )


def answer(completion: ChatCompletion) -> Optional[str]:
    return completion.choices[0].message.content


def prompt_tokens(completion: ChatCompletion) -> int:
    return completion.usage.prompt_tokens if completion.usage is not None else 0


def stream(client: ingle.OpenAI) -> ingle.Stream[ChatCompletionChunk]:
    return client.chat.completions.create(model="@me/shout", messages=MESSAGES, stream=True)


def delta(chunk: ChatCompletionChunk) -> Optional[str]:
    return chunk.choices[0].delta.content if chunk.choices else None


def streamed_text(client: ingle.OpenAI) -> str:
    with stream(client) as chunks:
        return "".join(delta(chunk) or "" for chunk in chunks)


def embed(client: ingle.OpenAI, texts: List[str]) -> CreateEmbeddingResponse:
    return client.embeddings.create(model=EMBEDDER, input=texts)


def vector(response: CreateEmbeddingResponse, i: int) -> Union[List[float], str]:
    return response.data[i].embedding  # a str with encoding_format="base64"


def tokenize(client: ingle.OpenAI, text: str) -> TokenizeResponse:
    return client.tokenize(model=MODEL, content=text, add_special=False)


def token_ids(response: TokenizeResponse) -> List[int]:
    return response.tokens


def pieces(client: ingle.OpenAI, text: str) -> List[Tuple[int, Union[str, List[int]]]]:
    tokens = client.tokenize(model=MODEL, content=text, with_pieces=True).tokens
    return [(token.id, token.piece) for token in tokens]


def detokenize(client: ingle.OpenAI, ids: List[int]) -> str:
    return client.detokenize(model=MODEL, tokens=ids).content


async def ask_async(client: ingle.AsyncOpenAI, question: str) -> ChatCompletion:
    return await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}]
    )


async def stream_async(client: ingle.AsyncOpenAI) -> ingle.AsyncStream[ChatCompletionChunk]:
    return await client.chat.completions.create(model="@me/shout", messages=MESSAGES, stream=True)


async def model_ids(client: ingle.AsyncOpenAI) -> List[str]:
    return [model.id for model in await client.models.list()]


async def round_trip_async(client: ingle.AsyncOpenAI, text: str) -> str:
    ids = token_ids(await client.tokenize(model=MODEL, content=text))
    return (await client.detokenize(model=MODEL, tokens=ids)).content


async def is_loaded(client: ingle.AsyncOpenAI) -> bool:
    return await client.models.is_loaded(MODEL)


async def main_async() -> None:
    async with ingle.AsyncOpenAI(predictors=[shout]) as client:
        print(answer(await ask_async(client, "Hi")), await model_ids(client))
        async for chunk in await stream_async(client):
            print(delta(chunk) or "", end="")
        print(await round_trip_async(client, "Bonjour"), await is_loaded(client))


def main() -> None:
    client = ingle.OpenAI(predictors=[shout])
    completion = ask(client, "Name the capital of France.")
    print(answer(completion), prompt_tokens(completion), streamed_text(client))
    print(len(vector(embed(client, ["a cat", "a dog"]), 0)))
    ids = token_ids(tokenize(client, "Bonjour"))
    print(detokenize(client, ids), pieces(client, "<|im_start|>Hi"))
    print(client.models.unload(MODEL), ingle.__version__)
    asyncio.run(main_async())


if __name__ == "__main__":
    main()
