"""``images.generate`` on Python predictors annotated ``ImageWidth``, ``ImageHeight`` and
``ImageCount``: eager and generator, created and streamed, in process and through
``ingle.serve`` with the openai SDK; answers checked against the openai package's types."""

import asyncio
import base64
import io
from typing import Annotated, Iterator

import numpy as np
import openai
import pydantic
import pytest

import ingle
from ingle import Parameter, predictor
from ingle.beta import Annotations

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}


def painted(prompt: str, width: int, height: int, step: int = 0) -> np.ndarray:
    """The prompt's colour, the green channel a gradient along x, ``step`` in blue."""
    colour = next((c for name, c in COLOURS.items() if name in prompt), (0, 0, 255))
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[..., 0] = colour[0]
    image[..., 1] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    image[..., 2] = step
    return image


@predictor(tag="@test/paint")
def paint(
    prompt: str,
    width: Annotated[int, Parameter.ImageWidth("Width.", min=1, max=256)] = 8,
    height: Annotated[int, Parameter.ImageHeight("Height.", min=1, max=256)] = 4,
    count: Annotated[int, Parameter.ImageCount("How many.", min=1, max=4)] = 1,
) -> np.ndarray:
    """Paints the colour the prompt names: a list of images, one per `count`."""
    return [painted(prompt, width, height, i) for i in range(count)]


@predictor(tag="@test/refine")
def refine(
    prompt: str,
    width: Annotated[int, Annotations.ImageWidth(description="Width.")] = 8,
    height: Annotated[int, Annotations.ImageHeight(description="Height.")] = 4,
) -> Iterator[np.ndarray]:
    """Three passes, each a finer image (blue = the pass): the last is the image."""
    for step in (1, 2, 3):
        yield painted(prompt, width, height, step)


@predictor(tag="@test/floats")
def floats(prompt: str, width: Annotated[int, Parameter.ImageWidth()] = 2) -> np.ndarray:
    return np.zeros((2, width, 3), dtype=np.float32)


@predictor(tag="@test/vast")
def vast(prompt: str, width: Annotated[int, Parameter.ImageWidth()] = 2) -> np.ndarray:
    # 50,000 x 50,000 RGB: 7.5 GB that a view holds without memory, which no copy may touch.
    return np.broadcast_to(np.zeros((1, 1, 3), dtype=np.uint8), (50_000, 50_000, 3))


@predictor(tag="@test/vast-pair")
def vast_pair(
    prompt: str,
    width: Annotated[int, Parameter.ImageWidth()] = 2,
    count: Annotated[int, Parameter.ImageCount("How many.", min=1, max=2)] = 2,
) -> np.ndarray:
    # Two of 15,000 x 15,000 (675 MB each): each under the bound, their stack over it.
    return [np.broadcast_to(np.zeros((1, 1, 3), dtype=np.uint8), (15_000, 15_000, 3))] * count


@pytest.fixture(scope="module")
def users():
    return ingle.OpenAI(predictors=[paint, refine, floats, vast, vast_pair])


def pixels(b64: str) -> np.ndarray:
    import av  # FFmpeg's PNG / JPEG / WebP decoders: not the encoder ingle uses

    with av.open(io.BytesIO(base64.b64decode(b64))) as container:
        frame = next(container.decode(video=0))
        return frame.to_ndarray(format="rgb24")


def test_an_eager_predictor_paints_at_the_size_and_count_asked(users):
    r = users.images.generate(model="@test/paint", prompt="a red square", size="16x9", n=2,
                              quality="high")
    typed = openai.types.ImagesResponse.model_validate(r.model_dump())
    assert typed.quality == "high" and typed.background == "opaque"
    assert typed.size == "16x9" and typed.output_format == "png" and len(typed.data) == 2
    for i, image in enumerate(r.data):
        rgb = pixels(image.b64_json)
        assert rgb.shape == (9, 16, 3)
        assert tuple(rgb[0, 0]) == (255, 0, i) and tuple(rgb[8, 15]) == (255, 255, i)
        assert image.to_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    jpeg = users.images.generate(model="@test/paint", prompt="green", output_format="jpeg",
                                 output_compression=90)
    assert jpeg.data[0].to_bytes()[:2] == b"\xff\xd8"
    r, g, _ = pixels(jpeg.data[0].b64_json)[0, 7]
    assert r < 10 and g > 240
    webp = users.images.generate(model="@test/paint", prompt="blue", output_format="webp", size="auto")
    assert webp.size == "8x4" and webp.data[0].to_bytes()[8:12] == b"WEBP"


def test_a_generators_yields_stream_as_partial_images(users):
    events = list(users.images.generate(model="@test/refine", prompt="blue", stream=True, partial_images=2))
    kinds = [e.type for e in events]
    assert kinds == ["image_generation.partial_image"] * 2 + ["image_generation.completed"]
    assert [int(pixels(e.b64_json)[0, 0, 2]) for e in events] == [1, 2, 3]
    adapter = pydantic.TypeAdapter(openai.types.ImageGenStreamEvent)
    for event in events:
        adapter.validate_python(event.model_dump(exclude_none=True))
    assert events[1].partial_image_index == 1
    whole = users.images.generate(model="@test/refine", prompt="blue")
    assert pixels(whole.data[0].b64_json)[0, 0, 2] == 3


def test_mistakes_are_errors_naming_the_field_or_the_output(users):
    for params, param in [
        ({"size": "10000x10000"}, "size"),
        ({"size": "512x16"}, "size"),  # over the predictor's own max
        ({"n": 5}, "n"),  # over the predictor's ImageCount max
        ({"n": 11}, "n"),
        ({"response_format": "url"}, "response_format"),
        ({"output_format": "gif"}, "output_format"),
        ({"partial_images": 9}, "partial_images"),
    ]:
        with pytest.raises(ingle.BadRequestError) as refused:
            users.images.generate(model="@test/paint", prompt="red", **params)
        assert refused.value.param == param, (params, refused.value)
    with pytest.raises(ingle.BadRequestError) as no_count:
        users.images.generate(model="@test/refine", prompt="red", n=2)
    assert no_count.value.param == "n"
    with pytest.raises(ingle.InternalServerError) as broken:
        users.images.generate(model="@test/floats", prompt="red")
    assert "float32" in str(broken.value)
    assert users.images.generate(model="@test/paint", prompt="red").data


def test_a_predictor_returning_a_50000_by_50000_image_is_refused_before_any_copy(users):
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    with pytest.raises(ingle.InternalServerError) as vast_image:
        users.images.generate(model="@test/vast", prompt="red")
    assert "[50000, 50000, 3]" in str(vast_image.value) and "GiB" in str(vast_image.value)
    with pytest.raises(ingle.InternalServerError) as vast_pair_of_images:
        users.images.generate(model="@test/vast-pair", prompt="red", n=2)
    assert "list of 2" in str(vast_pair_of_images.value), vast_pair_of_images.value
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown < 512 * 1024, f"the peak memory grew {grown} KiB"
    assert users.images.generate(model="@test/paint", prompt="red").data


def test_async_generate_and_stream(users):
    async def main():
        client = ingle.AsyncOpenAI(predictors=[paint, refine])
        whole = await client.images.generate(model="@test/paint", prompt="red", size="4x4")
        events = [e.type async for e in await client.images.generate(
            model="@test/refine", prompt="red", stream=True, partial_images=1)]
        return whole, events

    whole, events = asyncio.run(main())
    assert whole.size == "4x4"
    assert events == ["image_generation.partial_image", "image_generation.completed"]


def test_ingle_serve_serves_images_to_the_openai_sdk(users):
    with ingle.start_server(users, port=0, api_key="secret") as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="secret", max_retries=0)
        r = sdk.images.generate(model="@test/paint", prompt="green", size="6x3", n=3)
        assert isinstance(r, openai.types.ImagesResponse) and len(r.data) == 3
        assert pixels(r.data[2].b64_json).shape == (3, 6, 3)
        stream = sdk.images.generate(model="@test/refine", prompt="red", stream=True, partial_images=3)
        events = list(stream)
        assert [e.type for e in events] == ["image_generation.partial_image"] * 2 + ["image_generation.completed"]
        assert isinstance(events[-1], openai.types.ImageGenCompletedEvent)
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.images.generate(model="@test/paint", prompt="red", size="huge")
        assert refused.value.body["param"] == "size"
