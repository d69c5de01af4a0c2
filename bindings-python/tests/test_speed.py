"""Runtime CPU dispatch, the GPU modules, the prompt cache and unloading, through the Python
package."""

import os
import sys

import openai.types

import ingle
from conftest import MODEL

# Eight notes (about 250 tokens): enough for the cache to matter. That a history longer than one
# 512-token batch answers as a cold model does is tests/tests/prompt_cache.rs's; here, that the
# package carries the cached tokens through.
NOTES = "You are a helpful assistant. These are the notes of this week's planning meeting.\n" + "".join(
    f"Note {i}: the team reviewed task {i} of the release plan, assigned it to group {i % 5 + 1} "
    f"and agreed to report on it by day {i % 7 + 1}.\n"
    for i in range(1, 9)
)


def test_system_info_names_the_best_variant():
    info = ingle.system_info()
    assert info["version"] == ingle.__version__
    scores = info["cpu_variants"]
    assert info["cpu_variant"] in scores and scores[info["cpu_variant"]] == max(scores.values()) > 0
    assert info["cpu_features"].startswith("CPU : ")
    assert info["cpu_backend_path"].endswith(f"libggml-cpu-{info['cpu_variant']}.so")


def test_system_info_says_what_became_of_the_gpu_modules():
    gpu = ingle.system_info()["gpu"]
    assert gpu["requested"] == os.environ.get("INGLE_DEVICE", "auto")
    backends = [b for b, _ in gpu["loaded"]] + [b for b, _ in gpu["skipped"]]
    assert sorted(backends) == ["cuda", "vulkan"], gpu
    assert all(d["memory_total"] > 0 for d in gpu["devices"]), gpu
    # And where the ONNX models run: the ONNX Runtime build, CUDA or the CPU, and why not CUDA.
    onnx = ingle.system_info()["onnx"]
    assert onnx["library"].endswith("libonnxruntime.so.1.31.1"), onnx
    assert onnx["execution_provider"] in ("cpu", "cuda"), onnx
    if not os.path.exists("/dev/nvidia0"):
        assert onnx["execution_provider"] == "cpu" and onnx["why"], onnx


def test_the_cuda_wheels_libraries_are_added_to_ingles_search_path(tmp_path, monkeypatch):
    # What `pip install ingle[cuda]` lays out: NVIDIA's namespace package `nvidia`, with CUDA
    # 13's libraries in nvidia/cu13/lib (CUDA 12's wheels: nvidia/cuda_runtime/lib, ...).
    (tmp_path / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (tmp_path / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    (tmp_path / "nvidia" / "cudnn" / "lib").mkdir(parents=True)  # nvidia-cudnn-cu13
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "nvidia", raising=False)
    monkeypatch.setenv("INGLE_CUDA_PATH", "/opt/mine")
    from ingle._cuda import add_to_search_path

    add_to_search_path()
    add_to_search_path()  # twice: nothing is added twice
    assert os.environ["INGLE_CUDA_PATH"].split(os.pathsep) == [
        "/opt/mine", str(tmp_path / "nvidia" / "cu13" / "lib"), str(tmp_path / "nvidia" / "cublas" / "lib"),
        str(tmp_path / "nvidia" / "cudnn" / "lib")]


def greedy(client, messages):
    return client.chat.completions.create(model=MODEL, messages=messages, max_tokens=32, temperature=0)


def test_a_follow_up_reuses_the_history_and_answers_as_a_cold_client():
    warm = ingle.OpenAI()
    first = [{"role": "system", "content": NOTES}, {"role": "user", "content": "Who has task 3?"}]
    turn1 = greedy(warm, first)
    follow = first + [
        {"role": "assistant", "content": turn1.choices[0].message.content},
        {"role": "user", "content": "And task 7?"},
    ]
    turn2 = greedy(warm, follow)
    assert turn2.usage.prompt_tokens_details.cached_tokens == turn1.usage.prompt_tokens
    openai.types.CompletionUsage.model_validate(turn2.usage.model_dump())
    cold = greedy(ingle.OpenAI(), follow)
    assert cold.usage.prompt_tokens_details.cached_tokens == 0
    assert turn2.choices[0].message.content == cold.choices[0].message.content
    # Streamed, with usage: the same answer, and the whole prompt but its last two tokens cached.
    chunks = list(warm.chat.completions.create(model=MODEL, messages=follow, max_tokens=32, temperature=0,
                                                stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == cold.choices[0].message.content
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == turn2.usage.prompt_tokens - 2


def test_unload_frees_the_model_and_the_next_request_reloads_it():
    client = ingle.OpenAI()
    messages = [{"role": "user", "content": "Name the capital of France."}]
    before = greedy(client, messages).choices[0].message.content
    assert client.models.is_loaded(MODEL)
    assert client.models.unload(MODEL) is True
    assert not client.models.is_loaded(MODEL)
    assert client.models.unload(MODEL) is False
    assert greedy(client, messages).choices[0].message.content == before
    assert client.models.is_loaded(MODEL)
    try:
        client.models.unload("@nobody/nothing")
        raise AssertionError("no error")
    except ingle.NotFoundError as e:
        assert "@nobody/nothing" in e.message
