"""What the tests share: the models, prompts and tools, kept simple for a 0.5B model."""

import os

# Calls tools. The opt-in tier (scripts/test-clients --large) runs the agent rows on the 1.5B.
SMALL_QWEN = "@local/qwen2.5-coder-0.5b-instruct"
QWEN = os.environ.get("INGLE_CLIENTS_TOOLS_MODEL") or SMALL_QWEN
SMOL = "@local/smollm2-135m-instruct"  # the default chat model; no tools
MINILM = "@local/all-minilm-l6-v2"  # embeddings, 384 dimensions
TIMEOUT = 120  # seconds, per request: a hang fails the test instead of the run

URL = os.environ.get("INGLE_SERVE_URL", "")
KEY = os.environ.get("INGLE_SERVE_KEY", "")

CAPITAL = "What is the capital of France? Answer in one word."
SENTENCE = "What is the capital of France? Answer in a short sentence."  # streams in pieces
CITY_QUESTION = "Which city is the capital of France, and which country is it in?"
WEATHER_QUESTION = "What's the weather in Paris right now?"


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"The weather in {city} is sunny, 21 degrees celsius."


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def is_paris(city) -> bool:
    return isinstance(city, str) and "paris" in city.lower()


# llama.cpp's sampling extensions, as every llama.cpp-based server takes them, and a Jinja
# template variable; a bad value must come back as ingle's 400, proving the framework sent it.
EXTENSIONS = {"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1,
              "chat_template_kwargs": {"enable_thinking": False}}
