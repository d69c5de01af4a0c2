"""Your own predictors, served by the OpenAI client: a chat model with a persona (wrapping the
default model) and a speech "model" that plays a tone per voice.

    python examples/python/predictor.py
"""

from typing import Annotated, Iterator, Literal

import numpy as np

from ingle import OpenAI, Parameter, predictor
from ingle.types import ChatCompletionChunk, ChatCompletionMessageParam

MODEL = "@local/smollm2-135m-instruct"
client = OpenAI()


@predictor(tag="@me/pirate")
def pirate(
    messages: list[ChatCompletionMessageParam],
    max_tokens: Annotated[int, Parameter.MaxTokens("Most tokens to generate.")] = 64,
) -> Iterator[ChatCompletionChunk]:
    """The default model, told to talk like a pirate."""
    system = {"role": "system", "content": "You are a pirate. Answer briefly, like a pirate."}
    yield from client.chat.completions.create(
        model=MODEL, messages=[system, *messages], max_tokens=max_tokens, stream=True)


@predictor(tag="@me/tone")
def tone(
    text: Annotated[str, Parameter.Generic("Text to 'speak'.")],
    voice: Annotated[Literal["low", "high"], Parameter.AudioVoice("The pitch.")],
    speed: Annotated[float, Parameter.AudioSpeed("Speed.", min=0.25, max=4.0)] = 1.0,
) -> Iterator[Annotated[np.ndarray, Parameter.Audio("A beep per word.", sample_rate=24_000)]]:
    t = np.arange(int(24_000 * 0.2 / speed)) / 24_000
    for _ in text.split():
        yield (0.3 * np.sin(2 * np.pi * (220 if voice == "low" else 880) * t)).astype(np.float32)


client.predictors.register(pirate, tone)

for chunk in client.chat.completions.create(
        model="@me/pirate", messages=[{"role": "user", "content": "Where is the treasure?"}], stream=True):
    if chunk.choices and chunk.choices[0].delta.content:
        print(chunk.choices[0].delta.content, end="", flush=True)
print()
speech = client.audio.speech.create(model="@me/tone", voice="high", input="one two three", response_format="wav")
speech.write_to_file("tone.wav")
print(f"tone.wav: {len(speech.content)} bytes")
