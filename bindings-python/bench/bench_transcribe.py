"""Speech to text through the Python package vs faster-whisper 1.2.1 (CTranslate2) on the same
Whisper weights (the CTranslate2 model.bin both load), greedy for both (beam_size=1, best_of=1,
no VAD), interleaved rounds in one run, median wall time per file (audio decoding included):

- tiny.en (English-only), int8, on the English recordings beckett.wav and two_cities.wav, the
  language given ("en");
- base (multilingual), int8 and then float32, on those recordings and on the French, German and
  Spanish clips of tests/data/speech (scripts/make-speech-clips), the language left to each
  engine to detect.

int8 / float32 is faster-whisper's compute_type and, for ingle, INGLE_WHISPER_PRECISION while a
client of its own loads the model. For each model, precision and file: both times, the real-time
factor, the ratio ingle / faster-whisper, the word error rate of each transcript against the
other (both texts printed when they differ), the language each engine reports; then all of it as
a markdown table for docs/speed.md. With BENCH_HOUR=1 also an hour of audio (the two_cities
recording repeated) through each on tiny.en int8, with the peak memory of a process doing only
that. Figures, not a test. Run with scripts/bench transcribe."""

import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
import wave

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
THREADS = 2
MODELS_DIR = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
)
RECORDINGS = os.path.join(MODELS_DIR, "recordings")
CLIPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "speech")
ENGLISH = [os.path.join(RECORDINGS, f) for f in ("beckett.wav", "two_cities.wav")]
OTHER_LANGUAGES = [os.path.join(CLIPS, f) for f in ("fr.flac", "de.flac", "es.flac")]

# (model, ingle's model, weights folder in MODELS_DIR, precision, language given, files)
CASES = [
    ("tiny.en", "@local/whisper-tiny-en", "whisper-tiny-en", "int8", "en", ENGLISH),
    ("base", "@local/whisper-base", "whisper-base", "int8", None, ENGLISH + OTHER_LANGUAGES),
    ("base", "@local/whisper-base", "whisper-base", "float32", None, ENGLISH + OTHER_LANGUAGES),
]

# faster-whisper reports a language's code, ingle (verbose_json) its English name.
LANGUAGE_NAMES = {"en": "english", "fr": "french", "de": "german", "es": "spanish"}


@contextlib.contextmanager
def whisper_precision(precision):
    """INGLE_WHISPER_PRECISION=float32 inside the block for float32, unset for int8 (ingle's
    default); as it was after it."""
    before = os.environ.pop("INGLE_WHISPER_PRECISION", None)
    if precision == "float32":
        os.environ["INGLE_WHISPER_PRECISION"] = "float32"
    try:
        yield
    finally:
        os.environ.pop("INGLE_WHISPER_PRECISION", None)
        if before is not None:
            os.environ["INGLE_WHISPER_PRECISION"] = before


def ingle_engine(model, precision, language, load_with):
    """A client of its own, its model loaded here by transcribing `load_with`: ingle reads
    INGLE_WHISPER_PRECISION when a client first uses a model, and each ingle.OpenAI() has a
    registry of its own (its own loaded models), so the int8 and float32 clients each load it."""
    import ingle

    given = {"language": language} if language else {}
    with whisper_precision(precision):
        client = ingle.OpenAI()

        def transcribe(path):
            """The text and the language (its English name) of `path`."""
            with open(path, "rb") as f:
                result = client.audio.transcriptions.create(
                    model=model, file=f, response_format="verbose_json", **given
                )
            return result.text.strip(), result.language

        transcribe(load_with)
    return f"ingle {ingle.__version__} (Python package, {precision})", transcribe


def faster_whisper_engine(weights, precision, language):
    import faster_whisper

    # faster-whisper wants CTranslate2's vocabulary (vocabulary.txt or .json) beside the weights;
    # the tokenizer.json ingle reads holds the same vocabulary.
    model = faster_whisper.WhisperModel(
        os.path.join(MODELS_DIR, weights), device="cpu", compute_type=precision,
        cpu_threads=THREADS,
    )

    def transcribe(path):
        """The text and the language (its English name) of `path`."""
        segments, info = model.transcribe(
            path, beam_size=1, best_of=1, language=language, vad_filter=False
        )
        text = "".join(s.text for s in segments).strip()
        return text, LANGUAGE_NAMES.get(info.language, info.language)

    version = faster_whisper.__version__
    return f"faster-whisper {version} (CTranslate2, {precision}, greedy)", transcribe


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
    """Seconds of audio in `path` (wav or flac), as faster-whisper decodes it."""
    from faster_whisper import decode_audio

    return len(decode_audio(path, sampling_rate=16_000)) / 16_000


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
    if engine_name == "ingle":
        name, transcribe = ingle_engine("@local/whisper-tiny-en", "int8", "en", ENGLISH[0])
    else:
        name, transcribe = faster_whisper_engine("whisper-tiny-en", "int8", "en")
    path = hour_file()
    start = time.perf_counter()
    text, _ = transcribe(path)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{name}: {seconds:.1f} s for 3600 s of audio (RTF {seconds / 3600:.4f}), "
          f"peak RSS {peak:.0f} MB, {len(words(text))} words")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--hour":
        hour_child(sys.argv[2])
        return
    # Each case's pair of engines: ingle's client loads its model with the case's precision.
    engines = [
        (ingle_engine(model, precision, language, files[0]),
         faster_whisper_engine(weights, precision, language))
        for _, model, weights, precision, language, files in CASES
    ]
    runs = [(case, pair, f) for case, pair in zip(CASES, engines) for f in case[5]]
    results = {}  # (run index, engine index) → (text, language)
    times = {}  # (run index, engine index) → [seconds]
    for i, (_, pair, f) in enumerate(runs):  # warm-up: first-run allocations
        for e, (_, transcribe) in enumerate(pair):
            results[(i, e)] = transcribe(f)
            times[(i, e)] = []
    for _ in range(ROUNDS):
        for i, (_, pair, f) in enumerate(runs):
            for e, (_, transcribe) in enumerate(pair):
                start = time.perf_counter()
                transcribe(f)
                times[(i, e)].append(time.perf_counter() - start)

    print(f"transcription, {ROUNDS} interleaved rounds, median wall time "
          f"(cpu threads: {THREADS}, greedy: beam_size=1, best_of=1, no VAD)")
    table = []
    for i, ((label, _, _, precision, language, _), pair, f) in enumerate(runs):
        (ours, _), (theirs, _) = pair
        (ours_text, ours_language), (theirs_text, theirs_language) = results[(i, 0)], results[(i, 1)]
        a, b = statistics.median(times[(i, 0)]), statistics.median(times[(i, 1)])
        seconds = duration(f)
        name = os.path.basename(f)
        given = f"language given: {language}" if language else "language detected"
        print(f"  {label} {precision}, {name} ({seconds:.1f} s of audio, {given})")
        print(f"    {ours}: {a:.3f} s (RTF {a / seconds:.4f}), language {ours_language}")
        print(f"    {theirs}: {b:.3f} s (RTF {b / seconds:.4f}), language {theirs_language}")
        print(f"    ratio ingle / faster-whisper: {a / b:.2f}")
        wer = word_error_rate(ours_text, theirs_text)
        wer_back = word_error_rate(theirs_text, ours_text)
        print(f"    word error rate of ingle against faster-whisper: {wer:.3f}, "
              f"of faster-whisper against ingle: {wer_back:.3f}")
        if wer or wer_back:
            print(f"      ingle:          {ours_text}")
            print(f"      faster-whisper: {theirs_text}")
        if language:
            same = "given"
        elif ours_language == theirs_language:
            same = "yes"
        else:
            same = f"no ({ours_language} / {theirs_language})"
        table.append(f"| {label} | {precision} | {name} | {a:.3f} | {b:.3f} | {a / b:.2f} "
                     f"| {wer:.3f} | {same} |")
    print()
    print("| model | precision | file | ingle s | faster-whisper s | ratio | WER vs faster-whisper "
          "| same language |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    print("\n".join(table))
    if os.environ.get("BENCH_HOUR") == "1":
        print("an hour of audio (tiny.en, int8), each engine in a process of its own")
        for engine in ["ingle", "faster-whisper"]:
            subprocess.run([sys.executable, __file__, "--hour", engine], check=True)


if __name__ == "__main__":
    main()
