"""The second turn of a stored conversation (Responses API, `previous_response_id`) against the
same turn started cold: time to first token with about 1,000 tokens of history. Figures, not a
test. Run with scripts/bench responses.

Warm: on a client whose model has just answered turn 1, turn 2 names it by
`previous_response_id`; the stored conversation renders as turn 1's prompt plus its answer plus
the new input, so the llama backend's prompt cache holds all but the new tokens.
Cold (the anchor): the same turn-2 prompt, the whole history sent as input (`store: false`), on
the same client after the model was unloaded and loaded again (by an unrelated one-token
request, not timed): nothing is cached, every token is prefilled. One model in the process at a
time, so both runs have the cores to themselves.
Both are greedy, so they must say the same thing; the script checks it.
Goal (issue 31): warm time to first token <= 0.2 x cold."""

import os
import statistics
import tempfile
import time

import ingle

MODEL = "@local/smollm2-135m-instruct"
RUNS = 3
HISTORY = (
    "Here are my notes on the rivers of France. The Loire is the longest river in France; it "
    "rises in the Massif Central and flows north, then west through Orleans, Blois, Tours, Angers "
    "and Nantes to the Atlantic. Its valley is known for its castles, vineyards and gardens. "
    "The Seine flows through Troyes, Paris and Rouen to the Channel at Le Havre. The Rhone comes "
    "from a Swiss glacier, crosses Lake Geneva, meets the Saone at Lyon and reaches the "
    "Mediterranean near Arles. The Garonne rises in the Pyrenees and flows through Toulouse and "
    "Bordeaux, where it joins the Dordogne to form the Gironde estuary. "
)
TURN_2 = "Which river flows through Lyon? Answer in one sentence."


def first_token_seconds(client, **params):
    """(seconds to the first output_text delta, the whole output text) of a streamed response."""
    start = time.perf_counter()
    first = None
    text = []
    for event in client.responses.create(model=MODEL, stream=True, temperature=0, **params):
        if event.type == "response.output_text.delta":
            if first is None:
                first = time.perf_counter() - start
            text.append(event.delta)
    return first, "".join(text)


def main():
    store = tempfile.mkdtemp(prefix="ingle-bench-responses-")
    os.environ["INGLE_RESPONSES_STORE"] = os.path.join(store, "responses.sqlite3")
    client = ingle.OpenAI()
    history = HISTORY * 8  # about 1,000 tokens with the chat template
    warm, cold, history_tokens = [], [], []
    for run in range(RUNS):
        notes = f"(Run {run}.) " + history  # a new prefix each run: nothing cached across runs
        first = client.responses.create(model=MODEL, input=notes + "\nSay OK.", temperature=0,
                                             max_output_tokens=8)
        history_tokens.append(first.usage.total_tokens)
        seconds, warm_text = first_token_seconds(client, input=TURN_2, max_output_tokens=24,
                                                 previous_response_id=first.id)
        warm.append(seconds)
        # A fresh load, warmed on something else: nothing of this prompt is cached.
        client.models.unload(MODEL)
        client.responses.create(model=MODEL, input=f"Unrelated {run}.", max_output_tokens=1,
                                store=False)
        seconds, cold_text = first_token_seconds(
            client, store=False, max_output_tokens=24,
            input=[{"role": "user", "content": notes + "\nSay OK."},
                   {"role": "assistant", "content": first.output_text},
                   {"role": "user", "content": TURN_2}])
        cold.append(seconds)
        if warm_text != cold_text:
            raise SystemExit(f"turn 2 differs: warm {warm_text!r}, cold {cold_text!r}")
    warm_s, cold_s = statistics.median(warm), statistics.median(cold)
    print(f"history: {statistics.median(history_tokens):.0f} tokens (turn 1 prompt + answer); "
          f"runs: {RUNS}; model: {MODEL}")
    print(f"turn 2, previous_response_id (KV cache reused): first token in {warm_s * 1000:.0f} ms")
    print(f"turn 2, whole history, cold (anchor):           first token in {cold_s * 1000:.0f} ms")
    print(f"ratio warm / cold: {warm_s / cold_s:.3f} (goal <= 0.2); same greedy output: yes")


if __name__ == "__main__":
    main()
