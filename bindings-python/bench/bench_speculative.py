"""Speculative decoding by n-gram lookup on Qwen2.5-Coder-0.5B, greedy: a code edit (return a
function of about 300 tokens with one variable renamed) and an answer that quotes its context
(RAG-style), where most of the output repeats the prompt; and a story, where nothing repeats
(what speculation must not slow down). Output tokens/s of ingle with ngram_speculation = true,
of ingle without (plain decoding), and of llama-cpp-python plain and with its
LlamaPromptLookupDecoding (the anchor, when installed: scripts/bench speculative --with-anchor);
same machine, same run, ratios against ingle's plain decoding printed, with the share of drafted
tokens accepted. Figures, not a test. Run with scripts/bench speculative."""

import os
import statistics
import sys
import tempfile
import time

from machine import physical_cores

GGUF = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf"
PLAIN = "@bench/qwen-plain"
NGRAM = "@bench/qwen-ngram"
RUNS = 3

FUNCTION = '''def summarize_orders(orders, currency="EUR", include_cancelled=False):
    """Return totals per customer and overall for a list of orders.

    Each order is a dict with the keys "customer", "status", "items" and "shipping".
    Each item is a dict with "price", "quantity" and an optional "discount" (0 to 1).
    """
    totals = {}
    overall = 0.0
    for order in orders:
        if order["status"] == "cancelled" and not include_cancelled:
            continue
        customer = order["customer"]
        amount = 0.0
        for item in order["items"]:
            price = item["price"] * item["quantity"]
            discount = item.get("discount", 0.0)
            if discount < 0 or discount > 1:
                raise ValueError(f"bad discount {discount} for {customer}")
            amount += price * (1 - discount)
        amount += order.get("shipping", 0.0)
        totals[customer] = totals.get(customer, 0.0) + amount
        overall += amount
    report = {
        "currency": currency,
        "customers": {name: round(value, 2) for name, value in sorted(totals.items())},
        "overall": round(overall, 2),
    }
    return report
'''
CONTEXT = (
    "Document 1: The Rhine Falls near Schaffhausen are the largest plain waterfall in Europe. "
    "They are 150 metres wide and 23 metres high, and in summer about 600 cubic metres of water "
    "flow over them every second. Boats take visitors to the rock in the middle of the falls.\n"
    "Document 2: The Staubbach Falls in Lauterbrunnen drop 297 metres from an overhanging cliff, "
    "which makes them one of the highest free-falling waterfalls in Switzerland. Goethe visited "
    "them in 1779 and wrote the poem Song of the Spirits over the Waters about them.\n"
    "Document 3: The Giessbach Falls tumble into Lake Brienz over fourteen steps. A funicular "
    "opened in 1879 carries visitors from the boat landing to the Grandhotel Giessbach."
)
TASKS = {
    "code edit": dict(
        messages=[{"role": "user", "content":
                   "Rename the variable `amount` to `order_total` in this function. Return the "
                   "whole function and nothing else.\n\n" + FUNCTION}],
        max_tokens=400,
    ),
    "answer quoting context": dict(
        messages=[{"role": "user", "content":
                   CONTEXT + "\n\nUsing only the documents above, describe each of the three "
                   "waterfalls, quoting the documents' sentences word for word."}],
        max_tokens=300,
    ),
    "story (nothing repeats)": dict(
        messages=[{"role": "user", "content": "Write a short story about a lighthouse keeper."}],
        max_tokens=200,
    ),
}


def models_dir():
    return os.environ.get("INGLE_MODELS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ingle", "models")


def timed(call):
    start = time.perf_counter()
    reply = call()
    seconds = time.perf_counter() - start
    return seconds, reply["usage"]["completion_tokens"], reply["choices"][0]["message"]["content"]


def measure(call):
    call()  # warm-up
    runs = [timed(call) for _ in range(RUNS)]
    wall = statistics.median(r[0] for r in runs)
    return wall, runs[-1][1], runs[-1][2]


def main():
    import ingle

    threads = physical_cores()
    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    for tag, extra in [(PLAIN, ""), (NGRAM, "ngram_speculation = true\n")]:
        config.write(f'[[predictors]]\ntag = "{tag}"\nbackend = "llama"\nmodel = "{GGUF}"\n'
                     f'threads = {threads}\nparallel = 1\n{extra}\n')
    config.close()
    client = ingle.OpenAI(config=config.name)
    try:
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    except ImportError:
        Llama = None
    anchors = []
    if Llama is not None:
        path = os.path.join(models_dir(), GGUF)
        common = dict(n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False)
        anchors = [("llama-cpp-python", Llama(path, **common)),
                   ("llama-cpp-python, prompt lookup",
                    Llama(path, draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10), logits_all=True,
                          **common))]

    print(f"{GGUF}, {threads} threads, greedy, median of {RUNS}; speed-up = output tokens/s "
          "over ingle's plain decoding")
    print(f"{'':<58}{'wall s':>8}{'tokens':>8}{'tok/s':>8}{'speed-up':>10}  same text")
    for task, params in TASKS.items():
        def ingle_call(model):
            return lambda: client.chat.completions.create(
                model=model, temperature=0, **params).model_dump()
        before = client.metrics(NGRAM)
        rows = [("ingle, plain", measure(ingle_call(PLAIN))),
                ("ingle, ngram_speculation", measure(ingle_call(NGRAM)))]
        after = client.metrics(NGRAM)
        drafted = after["draft_tokens"] - before["draft_tokens"]
        accepted = after["accepted_draft_tokens"] - before["accepted_draft_tokens"]
        for name, llm in anchors:
            rows.append((name, measure(
                lambda llm=llm: llm.create_chat_completion(temperature=0, **params))))
        wall, tokens, text = rows[0][1]
        base = tokens / wall
        for name, (wall, tokens, other) in rows:
            same = "yes" if other == text else f"no, from character {prefix(other, text)}"
            print(f"{task + ': ' + name:<58}{wall:>8.2f}{tokens:>8}{tokens / wall:>8.1f}"
                  f"{tokens / wall / base:>9.2f}×  {same}")
        print(f"{task}: {accepted} of {drafted} drafted tokens accepted")
    if not anchors:
        print("(llama-cpp-python is not installed: scripts/bench speculative --with-anchor)")
    os.unlink(config.name)


def prefix(a, b):
    """Where two texts start to differ."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


if __name__ == "__main__":
    sys.exit(main())
