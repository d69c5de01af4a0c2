"""Images and audio in chat messages, to predictors that take them (ChatImages, ChatAudios);
reasoning out of them and reasoning_effort into them: in-process and through the openai SDK
against ingle.serve. The image predictor reads text with Tesseract OCR (scripts/setup --tests)."""

import base64
import io
import json
import pathlib
import struct
import subprocess
import sys
import wave
import zlib
from typing import Annotated, Any, Iterator, List, Literal

import anthropic
import numpy as np
import openai
import pytest
from PIL import Image, ImageDraw, ImageFont

import ingle
from ingle import Parameter, predictor
from ingle.beta import Annotations
from ingle.types import ChatCompletionChunk, ChatCompletionMessageParam

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "python_shared"))
import openresponses_check as openresponses  # noqa: E402
from conftest import MODEL  # noqa: E402
from test_transcription import BECKETT, BECKETT_WORDS  # noqa: E402

WHISPER = "@local/whisper-tiny-en"


def png_url(image: Image.Image, media_type: str = "image/png") -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return f"data:{media_type};base64," + base64.b64encode(buffer.getvalue()).decode()


def text_image(text: str) -> Image.Image:
    """Black text on white, large enough for Tesseract."""
    image = Image.new("RGB", (640, 120), "white")
    ImageDraw.Draw(image).text((20, 25), text, fill="black", font=ImageFont.load_default(size=56))
    return image


def wav_bytes(samples: np.ndarray, rate: int, width: int = 2) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(width)
        w.setframerate(rate)
        if width == 2:
            w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
        else:
            w.writeframes(((np.clip(samples, -1, 1) + 1) * 127.5).astype(np.uint8).tobytes())
    return buffer.getvalue()


@predictor(tag="@test/ocr")
def ocr(
    messages: list[ChatCompletionMessageParam],
    images: Annotated[list, Annotations.ChatImages(description="The images.")],
) -> Iterator[str]:
    """Reads the text of each image of the conversation with Tesseract."""
    for image in images:
        assert isinstance(image, Image.Image), type(image)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        run = subprocess.run(["tesseract", "stdin", "stdout", "--psm", "7"], input=buffer.getvalue(),
                             capture_output=True, check=True, timeout=60)
        yield run.stdout.decode().strip() + "\n"


@predictor(tag="@test/pixels")
def pixels(
    messages: list[ChatCompletionMessageParam],
    images: Annotated[List[np.ndarray], Parameter.ChatImages("As arrays.")],
) -> Iterator[str]:
    """Each image's shape and mean colour, and where the images were in the messages."""
    parts = [p["type"] for m in messages if isinstance(m["content"], list) for p in m["content"]]
    yield f"parts={','.join(parts)}\n"
    for array in images:
        yield f"{array.shape} {array.dtype} {[round(float(c)) for c in array.reshape(-1, array.shape[2]).mean(0)]}\n"


whisper_client = ingle.OpenAI()


@predictor(tag="@test/listen-chat")
def listen(
    messages: list[ChatCompletionMessageParam],
    audios: Annotated[list, Annotations.ChatAudios(description="Voice notes.", sample_rate=16_000)],
) -> Iterator[str]:
    """Transcribes each voice note with ingle's own Whisper, through the client."""
    for samples in audios:
        assert samples.dtype == np.float32 and samples.ndim == 1
        text = whisper_client.audio.transcriptions.create(
            model=WHISPER, file=("note.wav", wav_bytes(samples, 16_000))).text
        yield f"{len(samples) / 16_000:.2f}s: {text.strip()}\n"


@predictor(tag="@test/thinker")
def thinker(
    messages: list[ChatCompletionMessageParam],
    effort: Annotated[Literal["low", "medium", "high"], Annotations.ReasoningEffort(description="How hard.")] = "medium",
) -> Iterator[ChatCompletionChunk]:
    """Thinks aloud (as much as it is asked to), then answers."""
    for step in range({"low": 1, "medium": 2, "high": 3}[effort]):
        yield {"choices": [{"delta": {"reasoning_content": f"step {step + 1}. "}}]}
    yield {"choices": [{"delta": {"content": f"answer at {effort}"}}]}


@predictor(tag="@test/windowed")
def windowed(
    messages: Annotated[list, Annotations.ChatMessages(description="The chat.", context_length=128)],
    max_tokens: Annotated[int, Annotations.MaxOutputTokens(description="Most tokens.")] = 16,
) -> Iterator[str]:
    """Muna's ChatMessages with the context length its model holds."""
    yield f"{len(messages)} messages, up to {max_tokens} tokens"


@pytest.fixture(scope="module")
def media() -> ingle.OpenAI:
    return ingle.OpenAI(predictors=[ocr, pixels, listen, thinker, windowed])


def user(*parts: Any) -> list:
    return [{"role": "user", "content": list(parts)}]


def image_part(url: str, **extra: Any) -> dict:
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def test_an_image_predictor_reads_the_text_of_an_image_in_process_and_over_http(media):
    url = png_url(text_image("INGLE 42"))
    messages = user({"type": "text", "text": "What does it say?"}, image_part(url, detail="high"))
    r = media.chat.completions.create(model="@test/ocr", messages=messages)
    assert r.choices[0].message.content.strip() == "INGLE 42"
    with ingle.start_server(media, port=0) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="-", max_retries=0)
        r = sdk.chat.completions.create(model="@test/ocr", messages=messages)
        assert r.choices[0].message.content.strip() == "INGLE 42"
        chunks = list(sdk.chat.completions.create(model="@test/ocr", messages=messages, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == "INGLE 42"
        # The Responses and Anthropic shapes of the same image.
        b64 = url.split(",", 1)[1]
        r = sdk.responses.create(model="@test/ocr", input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Read it."},
            {"type": "input_image", "image_url": url, "detail": "auto"}]}])
        assert r.output_text.strip() == "INGLE 42"
        a = anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="-", max_retries=0)
        m = a.messages.create(model="@test/ocr", max_tokens=64, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
            {"type": "text", "text": "Read it."}]}])
        assert m.content[0].text.strip() == "INGLE 42"


def test_images_arrive_as_arrays_in_order_with_placeholders_where_they_were(media):
    red = Image.new("RGB", (3, 2), (255, 0, 0))
    translucent = Image.new("RGBA", (4, 5), (0, 0, 255, 128))
    messages = [
        {"role": "user", "content": [image_part(png_url(red)), {"type": "text", "text": "and"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [image_part(png_url(translucent))]},
    ]
    text = media.chat.completions.create(model="@test/pixels", messages=messages).choices[0].message.content
    assert text.splitlines() == [
        "parts=image,text,image",
        "(2, 3, 3) uint8 [255, 0, 0]",
        "(5, 4, 4) uint8 [0, 0, 255, 128]",
    ]
    # A JPEG (RGB), and a GIF (RGBA: a GIF's palette may hold transparency).
    for fmt, media_type, channels in (("JPEG", "image/jpeg", 3), ("GIF", "image/gif", 4)):
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (0, 255, 0)).save(buffer, format=fmt)
        url = f"data:{media_type};base64," + base64.b64encode(buffer.getvalue()).decode()
        text = media.chat.completions.create(model="@test/pixels", messages=user(image_part(url))).choices[0].message.content
        shape, _, colour = text.splitlines()[1].partition(" uint8 ")
        assert shape == f"(8, 8, {channels})" and abs(eval(colour)[1] - 255) <= 2, text


def test_a_voice_note_reaches_a_predictor_as_samples_at_its_rate(media):
    note = base64.b64encode(BECKETT.read_bytes()).decode()
    messages = user({"type": "text", "text": "Transcribe."},
                    {"type": "input_audio", "input_audio": {"data": note, "format": "wav"}})
    text = media.chat.completions.create(model="@test/listen-chat", messages=messages).choices[0].message.content
    seconds, _, words = text.partition("s: ")
    assert abs(float(seconds) - 159414 / 16000) < 0.05
    said = " ".join("".join(c for c in words.lower() if c.isalpha() or c == " ").split())
    assert said == BECKETT_WORDS, said


def test_reasoning_comes_apart_from_the_answer_in_every_shape(media):
    hi = [{"role": "user", "content": "hi"}]
    r = media.chat.completions.create(model="@test/thinker", messages=hi, reasoning_effort="high")
    assert r.choices[0].message.reasoning_content == "step 1. step 2. step 3. "
    assert r.choices[0].message.content == "answer at high"
    with ingle.start_server(media, port=0) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="-", max_retries=0)
        r = sdk.chat.completions.create(model="@test/thinker", messages=hi, reasoning_effort="low")
        assert r.choices[0].message.content == "answer at low"
        assert r.choices[0].message.model_extra["reasoning_content"] == "step 1. "
        chunks = [c for c in sdk.chat.completions.create(model="@test/thinker", messages=hi, stream=True) if c.choices]
        thinking = [c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks]
        assert [t for t in thinking if t] == ["step 1. ", "step 2. "]
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "answer at medium"
        # An effort the predictor does not take is a 400 naming reasoning_effort.
        with pytest.raises(openai.BadRequestError) as e:
            sdk.chat.completions.create(model="@test/thinker", messages=hi, reasoning_effort="xhigh")
        assert e.value.body["param"] == "reasoning_effort"
        # A model without a ReasoningEffort input refuses it, naming it.
        with pytest.raises(openai.BadRequestError) as e:
            sdk.chat.completions.create(model="@test/ocr", messages=hi, reasoning_effort="low")
        assert e.value.body["param"] == "reasoning_effort"

        # Responses: a reasoning item before the message, its text streamed as reasoning_text.
        from openai.types.responses import (ResponseReasoningItem, ResponseReasoningTextDeltaEvent,
                                            ResponseReasoningTextDoneEvent)
        r = sdk.responses.create(model="@test/thinker", input="hi", reasoning={"effort": "high"})
        assert isinstance(r.output[0], ResponseReasoningItem)
        assert r.output[0].content[0].text == "step 1. step 2. step 3. "
        assert r.output_text == "answer at high" and r.reasoning.effort == "high"
        events = list(sdk.responses.create(model="@test/thinker", input="hi", stream=True))
        deltas = [e.delta for e in events if isinstance(e, ResponseReasoningTextDeltaEvent)]
        assert deltas == ["step 1. ", "step 2. "]
        assert [e.text for e in events if isinstance(e, ResponseReasoningTextDoneEvent)] == ["step 1. step 2. "]
        # The same, raw, against the OpenResponses specification's schema.
        body = {"model": "@test/thinker", "input": "hi", "reasoning": {"effort": "high"}}
        whole = openresponses.check_response(json.loads("".join(openresponses.http(server.url, "POST", "/responses", body))))
        assert [item.type for item in whole.output] == ["reasoning", "message"]
        kinds = openresponses.check_events(openresponses.sse_events(
            openresponses.http(server.url, "POST", "/responses", {**body, "stream": True})))
        assert "response.reasoning_text.delta" in kinds and kinds[-1] == "response.completed"
        with pytest.raises(openai.BadRequestError) as e:
            sdk.responses.create(model="@test/ocr", input="hi", reasoning={"effort": "low"})
        assert e.value.body["param"] == "reasoning.effort"

        # Anthropic: a thinking block first; `thinking` with a budget is the effort.
        from anthropic.types import ThinkingBlock, TextBlock
        a = anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="-", max_retries=0)
        m = a.messages.create(model="@test/thinker", max_tokens=64, messages=hi,
                              thinking={"type": "enabled", "budget_tokens": 1024})
        assert isinstance(m.content[0], ThinkingBlock) and m.content[0].thinking == "step 1. "
        assert isinstance(m.content[1], TextBlock) and m.content[1].text == "answer at low"
        with a.messages.stream(model="@test/thinker", max_tokens=64, messages=hi,
                               thinking={"type": "enabled", "budget_tokens": 20_000}) as stream:
            final = stream.get_final_message()
        assert [b.type for b in final.content] == ["thinking", "text"]
        assert final.content[0].thinking == "step 1. step 2. step 3. "
        with pytest.raises(anthropic.BadRequestError) as e:
            a.messages.create(model="@test/ocr", max_tokens=64, messages=hi,
                              thinking={"type": "enabled", "budget_tokens": 1024})
        assert "`thinking`" in str(e.value)


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header says width × height, with a few bytes of data: a decompression bomb's
    header (a real one inflates to gigabytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 65536, 9)) + chunk(b"IEND", b""))


def test_bad_media_is_a_400_naming_the_part_and_the_client_stays_usable(media):
    good = png_url(Image.new("RGB", (2, 2)))
    png = base64.b64decode(good.split(",", 1)[1])
    bomb = png_claiming(20_000, 20_000)
    assert len(bomb) < 4096
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>'
    b64 = lambda data: base64.b64encode(data).decode()
    # Three hours of 8-bit 1 kHz silence: 10.8 MB, under the byte limit, over the duration one.
    hours = wav_bytes(np.zeros(3 * 3600 * 1000, dtype=np.float32), 1000, width=1)
    cases = [
        ("@test/pixels", image_part("data:image/png;base64," + b64(png[: len(png) // 2])), "truncated or corrupt"),
        ("@test/pixels", image_part("data:image/png;base64," + b64(bomb)), "20000 × 20000"),
        ("@test/pixels", image_part("data:image/svg+xml;base64," + b64(svg)), "SVG"),
        ("@test/pixels", image_part(good.replace("image/png", "image/jpeg")), "its data is PNG"),
        ("@test/pixels", image_part("https://example.com/cat.png"), "allow_urls"),
        ("@test/pixels", {"type": "video_url", "video_url": {"url": good}}, "not supported"),
        ("@test/listen-chat", {"type": "input_audio", "input_audio": {"data": b64(hours), "format": "wav"}}, "longer than 20 minutes"),
        ("@test/listen-chat", image_part(good), "declares no input annotated ChatImages"),
        (MODEL, image_part(good), "cannot take images"),
    ]
    with ingle.start_server(media, port=0) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="-", max_retries=0)
        for model, part, says in cases:
            messages = user({"type": "text", "text": "look"}, part)
            with pytest.raises(ingle.BadRequestError) as e:
                media.chat.completions.create(model=model, messages=messages)
            assert e.value.param.startswith("messages[0].content[1]"), (says, e.value.param)
            assert says in e.value.message, (says, e.value.message)
            with pytest.raises(openai.BadRequestError) as h:
                sdk.chat.completions.create(model=model, messages=messages)
            assert h.value.body["param"] == e.value.param and says in h.value.body["message"]
        # 100 images in one message: refused at the 65th.
        with pytest.raises(openai.BadRequestError) as h:
            sdk.chat.completions.create(model="@test/pixels", messages=user(*[image_part(good)] * 100))
        assert h.value.body["param"] == "messages[0].content[64]"
        r = sdk.chat.completions.create(model="@test/pixels", messages=user(image_part(good)))
        assert r.choices[0].message.content.splitlines()[1].startswith("(2, 2, 3)")


def test_an_image_url_is_fetched_only_where_allowed(media, monkeypatch):
    """A local HTTP server stands for the web: refused by default, fetched with
    INGLE_ALLOW_MEDIA_URLS=1, its 404 and its oversized answer a 400 naming the part."""
    import http.server
    import threading

    red = io.BytesIO()
    Image.new("RGB", (3, 3), (255, 0, 0)).save(red, format="PNG")
    big = b"\x89PNG" + b"\x00" * (21 << 20)

    class Files(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = {"/red.png": red.getvalue(), "/big.png": big}.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        ask = lambda path: media.chat.completions.create(
            model="@test/pixels", messages=user(image_part(base + path)))
        with pytest.raises(ingle.BadRequestError) as e:
            ask("/red.png")
        assert e.value.param == "messages[0].content[0]" and "INGLE_ALLOW_MEDIA_URLS" in e.value.message
        monkeypatch.setenv("INGLE_ALLOW_MEDIA_URLS", "1")
        assert ask("/red.png").choices[0].message.content.splitlines()[1] == "(3, 3, 3) uint8 [255, 0, 0]"
        for path, says in (("/nothing.png", "HTTP 404"), ("/big.png", "over the 20 MB")):
            with pytest.raises(ingle.BadRequestError) as e:
                ask(path)
            assert e.value.param == "messages[0].content[0]" and says in e.value.message, e.value.message
    finally:
        server.shutdown()


def test_a_declared_context_length_is_reported_and_bounds_max_tokens(media):
    assert media.models.retrieve("@test/windowed").context_length == 128
    assert media.models.retrieve("@test/ocr").context_length is None
    messages = [{"role": "user", "content": "hi"}]
    r = media.chat.completions.create(model="@test/windowed", messages=messages, max_tokens=127)
    assert r.choices[0].message.content == "1 messages, up to 127 tokens"
    with ingle.start_server(media, port=0) as server:
        sdk = openai.OpenAI(base_url=server.url, api_key="-", max_retries=0)
        listed = {m.id: m for m in sdk.models.list()}
        # `context_length` survives the SDK as an extra field, as OpenRouter's does.
        assert listed["@test/windowed"].model_extra["context_length"] == 128
        assert "context_length" not in (listed["@test/ocr"].model_extra or {})
        for field in ("max_tokens", "max_completion_tokens"):
            with pytest.raises(openai.BadRequestError) as e:
                sdk.chat.completions.create(model="@test/windowed", messages=messages, **{field: 128})
            error = e.value.body
            assert (error["code"], error["param"]) == ("context_length_exceeded", field), error
            assert "128 tokens" in error["message"] and "at most 127" in error["message"]
    # Declared wrong, it fails where it is declared, naming the field.
    with pytest.raises(ingle.PredictorDefinitionError) as e:
        @predictor(tag="@test/no-room")
        def no_room(messages: Annotated[list, Annotations.ChatMessages(context_length=0)]) -> Iterator[str]:
            yield ""
    assert "context_length" in str(e.value) and "at least 2" in str(e.value)
