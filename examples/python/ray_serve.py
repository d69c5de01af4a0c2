"""ingle at scale with Ray Serve: two replicas, each running the models in its own process with
ingle's in-process client, behind Ray's HTTP proxy, which speaks the OpenAI chat API to any
client (the openai SDK here). A user predictor (`@me/shout`) is served next to the default model.

    pip install ingle "ray[serve]==2.60.0" openai
    python examples/python/ray_serve.py        # starts a local Ray, serves, asks, shuts down

Each replica holds its models once (the client is made in __init__); Ray spreads requests over
the replicas and restarts one that dies. Streaming is left out to keep it short: Ray Serve
streams with a StreamingResponse of the chunks' `data:` lines.
"""

import asyncio
import os
from typing import Iterator

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

MODEL = "@local/smollm2-135m-instruct"


@serve.deployment(num_replicas=2, ray_actor_options={"num_cpus": 1})
class ChatCompletions:
    def __init__(self):
        import ingle
        from ingle import predictor
        from ingle.types import ChatCompletionChunk, ChatCompletionMessageParam

        self.client = client = ingle.OpenAI()

        @predictor(tag="@me/shout")
        def shout(messages: list[ChatCompletionMessageParam]) -> Iterator[ChatCompletionChunk]:
            """The default model's answer, in capitals."""
            for chunk in client.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, stream=True):
                for choice in chunk.choices:
                    if choice.delta.content:
                        choice.delta.content = choice.delta.content.upper()
                yield chunk

        self.client.predictors.register(shout)

    async def __call__(self, request: Request) -> JSONResponse:
        if request.url.path.rstrip("/") != "/v1/chat/completions":
            return JSONResponse({"error": {"message": f"Unknown request URL: {request.url.path}",
                                           "type": "invalid_request_error", "code": "unknown_url"}}, 404)
        import ingle
        try:
            body = await request.json()
            body.pop("stream", None)
            # The engine blocks while it generates: off Ray's event loop.
            reply = await asyncio.to_thread(self.client.chat.completions.create, **body)
        except ingle.APIStatusError as error:  # ingle's errors carry the OpenAI status and body
            return JSONResponse({"error": error.body}, error.status_code)
        # Which replica answered, for the curious (and the test).
        return JSONResponse(reply.model_dump(), headers={"x-replica-pid": str(os.getpid())})


app = ChatCompletions.bind()

if __name__ == "__main__":
    import openai
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    serve.run(app, route_prefix="/v1")
    client = openai.OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="none")
    for model in (MODEL, "@me/shout"):
        reply = client.chat.completions.create(model=model, max_tokens=24,
                                               messages=[{"role": "user", "content": "Name a colour."}])
        print(f"{model}: {reply.choices[0].message.content}")
    serve.shutdown()
    ray.shutdown()
