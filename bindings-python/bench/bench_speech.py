"""Text to speech through the Python package vs piper-tts 1.8.0 (the Piper project's own
package: ONNX Runtime + its bundled espeak-ng) on the same voice file, interleaved in one run:
real-time factor (synthesis time / audio duration, lower is faster) and time to the first audio
of a stream, for one sentence and for a five-sentence paragraph. Figures, not a test. Run with
scripts/bench speech."""

import os
import statistics
import sys
import time

MODEL = "@local/piper-en-us-joe-medium"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
MODELS_DIR = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
)
VOICE = os.path.join(MODELS_DIR, "piper", "en_US-joe-medium.onnx")

SENTENCE = "The quick brown fox jumps over the lazy dog near the quiet river bank."
PARAGRAPH = (
    "Hello from the local inference library. It runs open models inside your own process, "
    "with no server and no network. Every sentence is synthesised as soon as the one before it "
    "is done, so the first words play almost at once. Numbers like 1984 and $5.50 are read the "
    "way Piper reads them. This is the fifth and last sentence of the paragraph."
)


def ingle_engine():
    import ingle

    client = ingle.OpenAI()

    def stream(text):
        """Yields the seconds of audio of each chunk of the stream: a streamed wav (16-bit at
        the voice's 22050 Hz, like piper-tts's chunks; its first chunk has the 44-byte header)."""
        header = 44
        with client.audio.speech.with_streaming_response.create(
            model=MODEL, voice="alloy", input=text, response_format="wav"
        ) as response:
            for chunk in response.iter_bytes():
                yield (len(chunk) - header) / 2 / 22_050
                header = 0

    return f"ingle {ingle.__version__} (Python package, streamed wav)", stream


def piper_engine():
    import onnxruntime
    from piper import PiperVoice

    voice = PiperVoice.load(VOICE)

    def stream(text):
        for chunk in voice.synthesize(text):
            yield len(chunk.audio_int16_bytes) / 2 / chunk.sample_rate

    version = __import__("importlib.metadata").metadata.version("piper-tts")
    return f"piper-tts {version} (onnxruntime {onnxruntime.__version__})", stream


def measure(stream, text):
    """(real-time factor, seconds to the first audio, seconds of audio) of one synthesis."""
    start = time.perf_counter()
    first, audio = None, 0.0
    for seconds in stream(text):
        if first is None and seconds > 0:
            first = time.perf_counter() - start
        audio += seconds
    total = time.perf_counter() - start
    return total / audio, first, audio, total


def main():
    engines = [ingle_engine(), piper_engine()]
    print(f"# {os.cpu_count()} CPUs, medians of {ROUNDS} interleaved rounds after a warm-up; "
          f"{sys.platform}, Python {sys.version.split()[0]}")
    print()
    print("| text | engine | audio | real-time factor | first audio | whole synthesis |")
    print("|---|---|---|---|---|---|")
    results = {}
    for label, text in (("one sentence", SENTENCE), ("five sentences", PARAGRAPH)):
        runs = {name: [] for name, _ in engines}
        for name, stream in engines:
            measure(stream, text)  # warm
        for _ in range(ROUNDS):
            for name, stream in engines:
                runs[name].append(measure(stream, text))
        for name, _ in engines:
            rtf = statistics.median(r[0] for r in runs[name])
            first = statistics.median(r[1] for r in runs[name])
            audio = statistics.median(r[2] for r in runs[name])
            total = statistics.median(r[3] for r in runs[name])
            results[(label, name)] = (rtf, first, total)
            print(f"| {label} | {name} | {audio:.2f} s | {rtf:.3f} | {first * 1000:.0f} ms "
                  f"| {total * 1000:.0f} ms |", flush=True)
    ours, theirs = engines[0][0], engines[1][0]
    print()
    for label in ("one sentence", "five sentences"):
        (rtf, first, total), (prtf, pfirst, _) = results[(label, ours)], results[(label, theirs)]
        print(f"- {label}: real-time factor ingle / piper-tts = {rtf / prtf:.2f} (goal ≤ 0.8); "
              f"first audio ingle / piper-tts = {first / pfirst:.2f}; "
              f"ingle's first audio = {first / total:.2f} of its whole synthesis")


if __name__ == "__main__":
    main()
