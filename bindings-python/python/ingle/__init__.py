"""ingle: open AI models in-process, behind the interface of the ``openai`` client.

    from ingle import OpenAI
    client = OpenAI()
    r = client.chat.completions.create(model="@local/smollm2-135m-instruct",
                                       messages=[{"role": "user", "content": "Hi"}])
    print(r.choices[0].message.content)
"""

import typing as _typing

from ._cuda import add_to_search_path as _add_cuda_wheels_to_search_path

_add_cuda_wheels_to_search_path()  # before the native module starts llama.cpp
from . import types
from ._arguments import NOT_GIVEN
from ._client import AsyncOpenAI, AsyncStream, OpenAI, Stream
from ._anthropic import Anthropic, AsyncAnthropic
from ._exceptions import (
    AnthropicError,
    APIError,
    APIStatusError,
    BadRequestError,
    InternalServerError,
    NotFoundError,
    OpenAIError,
    StreamAlreadyConsumed,
)
from ._ingle import __version__
from ._ingle import system_info as _system_info
from ._predictors import (AudioSamples, Parameter, PredictionCancelled, Predictor,
                          PredictorDefinitionError, predictor)
from . import beta  # Muna's names: beta.Annotations, beta.openai.Message, ...
from ._serve import Server, serve, serve_async, start_server
from ._response import (
    AsyncStreamedBinaryAPIResponse,
    HttpxBinaryResponseContent,
    StreamedBinaryAPIResponse,
)



def system_info() -> _typing.Dict[str, _typing.Any]:
    """What ingle runs with here: its version, the CPU variant of llama.cpp's kernels loaded
    for this machine (``cpu_variant``, with every variant's score), the GPU modules loaded or
    skipped and the GPUs they found (``gpu``), and where each chat model runs (``offloads``)."""
    import json

    return _typing.cast(_typing.Dict[str, _typing.Any], json.loads(_system_info()))  # an object


__all__ = [
    "system_info",
    "OpenAI",
    "AsyncOpenAI",
    "Anthropic",
    "AsyncAnthropic",
    "Stream",
    "AsyncStream",
    "HttpxBinaryResponseContent",
    "StreamedBinaryAPIResponse",
    "AsyncStreamedBinaryAPIResponse",
    "NOT_GIVEN",
    "OpenAIError",
    "AnthropicError",
    "APIError",
    "APIStatusError",
    "BadRequestError",
    "NotFoundError",
    "InternalServerError",
    "StreamAlreadyConsumed",
    "predictor",
    "Predictor",
    "Parameter",
    "PredictionCancelled",
    "PredictorDefinitionError",
    "AudioSamples",
    "serve",
    "serve_async",
    "start_server",
    "Server",
    "types",
    "beta",
    "__version__",
]
