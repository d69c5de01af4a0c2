"""Speech to text through the Python package vs faster-whisper 1.2.1 (CTranslate2, int8, greedy)
on the same Whisper tiny.en weights (the CTranslate2 model.bin both load), interleaved in one
run: wall time per file (audio decoding included for both), the real-time factor, and the word
error rate of each transcript against the other. With BENCH_HOUR=1 also an hour of audio (the
two_cities recording repeated) through each, with the peak memory of a process doing only that.
Figures, not a test. Run with scripts/bench transcribe."""

import os
import resource
import statistics
import subprocess
import sys
import time
import wave

MODEL = "@local/whisper-tiny-en"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
MODELS_DIR = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
)
WEIGHTS = os.path.join(MODELS_DIR, "whisper-tiny-en")
RECORDINGS = os.path.join(MODELS_DIR, "recordings")
FILES = ["beckett.wav", "two_cities.wav"]


def ingle_engine():
    import ingle

    client = ingle.OpenAI()

    def transcribe(path):
        with open(path, "rb") as f:
            return client.audio.transcriptions.create(model=MODEL, file=f).text

    return f"ingle {ingle.__version__} (Python package)", transcribe


def faster_whisper_engine():
    import faster_whisper

    # faster-whisper wants CTranslate2's vocabulary beside the weights; the tokenizer.json
    # ingle reads holds the same vocabulary.
    model = faster_whisper.WhisperModel(
        WEIGHTS, device="cpu", compute_type="int8", cpu_threads=2
    )

    def transcribe(path):
        segments, _ = model.transcribe(
            path, beam_size=1, best_of=1, language="en", vad_filter=False
        )
        return "".join(s.text for s in segments).strip()

    version = faster_whisper.__version__
    return f"faster-whisper {version} (CTranslate2, int8, greedy)", transcribe


def words(text):
    kept = "".join(c if c.isalnum() or c == "'" else " " for c in text.lower())
    return kept.split()


def word_error_rate(hypothesis, reference):
    h, r = words(hypothesis), words(reference)
    row = list(range(len(r) + 1))
    for i, x in enumerate(h):
        previous, row[0] = row[0], i + 1
        for j, y in enumerate(r):
            previous, row[j + 1] = row[j + 1], min(previous + (x != y), row[j] + 1, row[j + 1] + 1)
    return row[len(r)] / max(1, len(r))


def duration(path):
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


def hour_file():
    """An hour of speech: two_cities.wav (48 kHz) repeated, written once as 16 kHz mono."""
    path = os.path.join(RECORDINGS, "two_cities_hour.wav")
    if os.path.exists(path):
        return path
    import numpy as np

    with wave.open(os.path.join(RECORDINGS, "two_cities.wav")) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    pcm = pcm[::3]  # 48 kHz → 16 kHz (the recording has nothing above 8 kHz worth keeping)
    repeats = int(3600 / (len(pcm) / 16_000)) + 1
    with wave.open(path + ".partial", "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(np.tile(pcm, repeats)[: 3600 * 16_000].tobytes())
    os.replace(path + ".partial", path)
    return path


def hour_child(engine_name):
    engine = {"ingle": ingle_engine, "faster-whisper": faster_whisper_engine}[engine_name]
    name, transcribe = engine()
    path = hour_file()
    start = time.perf_counter()
    text = transcribe(path)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name}: {seconds:.1f} s for 3600 s of audio (RTF {seconds / 3600:.4f}), "
          f"peak RSS {peak:.0f} MB, {len(words(text))} words")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--hour":
        hour_child(sys.argv[2])
        return
    engines = [ingle_engine(), faster_whisper_engine()]
    texts = {}
    times = {(name, f): [] for name, _ in engines for f in FILES}
    for name, transcribe in engines:  # warm-up: load, first-run allocations
        for f in FILES:
            texts[(name, f)] = transcribe(os.path.join(RECORDINGS, f))
    for _ in range(ROUNDS):
        for f in FILES:
            for name, transcribe in engines:
                start = time.perf_counter()
                transcribe(os.path.join(RECORDINGS, f))
                times[(name, f)].append(time.perf_counter() - start)
    (ours, _), (theirs, _) = engines
    print(f"transcription, {ROUNDS} interleaved rounds, median wall time (cpu threads: 2)")
    for f in FILES:
        seconds = duration(os.path.join(RECORDINGS, f))
        a, b = statistics.median(times[(ours, f)]), statistics.median(times[(theirs, f)])
        print(f"  {f} ({seconds:.1f} s of audio)")
        print(f"    {ours}: {a:.3f} s (RTF {a / seconds:.4f})")
        print(f"    {theirs}: {b:.3f} s (RTF {b / seconds:.4f})")
        print(f"    ratio ingle / faster-whisper: {a / b:.2f}")
        wer = word_error_rate(texts[(ours, f)], texts[(theirs, f)])
        print(f"    word error rate of ingle against faster-whisper: {wer:.3f}")
        print(f"    word error rate of faster-whisper against ingle: "
              f"{word_error_rate(texts[(theirs, f)], texts[(ours, f)]):.3f}")
        if wer:
            print(f"      ingle:          {texts[(ours, f)]}")
            print(f"      faster-whisper: {texts[(theirs, f)]}")
    if os.environ.get("BENCH_HOUR") == "1":
        print("an hour of audio, each engine in a process of its own")
        for engine in ["ingle", "faster-whisper"]:
            subprocess.run([sys.executable, __file__, "--hour", engine], check=True)


if __name__ == "__main__":
    main()
