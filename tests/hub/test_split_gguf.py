"""Tests for tests/hub/split_gguf.py: split a real GGUF into 3 shards and check them.

Needs the SmolLM2 GGUF in ingle's model cache (or $INGLE_SPLIT_TEST_MODEL): a failure that says
how to get it when it is absent. Standard library + pytest only; no llama.cpp needed.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import split_gguf  # noqa: E402

MODEL = Path(os.environ.get("INGLE_SPLIT_TEST_MODEL") or Path(
    os.environ.get("INGLE_MODELS_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ingle" / "models"
) / "SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def model():
    # A missing model is a failure that says how to get it, never a skip: scripts/test fetches it.
    assert MODEL.is_file(), f"{MODEL} is missing: run scripts/fetch-models (or set INGLE_SPLIT_TEST_MODEL)"
    return MODEL


@pytest.fixture(scope="module")
def shards(model, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("split") / "model"
    return split_gguf.split(str(MODEL), str(prefix), 3)


def test_names_follow_llama_split_path(shards):
    prefix = shards[0][: -len("-00001-of-00003.gguf")]
    assert shards == [f"{prefix}-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
    assert all(os.path.isfile(p) for p in shards)


def test_shards_parse_and_match_input(shards):
    summary = split_gguf.verify(str(MODEL), shards)
    assert summary["shards"] == 3
    assert sum(summary["tensors"]) == summary["input_tensors"]
    assert max(summary["tensors"]) - min(summary["tensors"]) <= 1


def test_kvs(shards):
    src = split_gguf.read_gguf(str(MODEL))
    parsed = [split_gguf.read_gguf(p) for p in shards]
    first = parsed[0]
    # all input KVs, same order and bytes, then split.no, split.tensors.count, split.count
    assert list(first.kvs)[: len(src.kvs)] == list(src.kvs)
    assert list(first.kvs)[len(src.kvs):] == ["split.no", "split.tensors.count", "split.count"]
    for key, kv in src.kvs.items():
        assert first.kvs[key].raw == kv.raw, key
    for i, sh in enumerate(parsed):
        if i > 0:
            assert list(sh.kvs) == ["split.no", "split.tensors.count", "split.count"]
        assert sh.version == 3
        assert (sh.kvs["split.no"].type, sh.value("split.no")) == (split_gguf.T_UINT16, i)
        assert (sh.kvs["split.count"].type, sh.value("split.count")) == (split_gguf.T_UINT16, 3)
        assert (sh.kvs["split.tensors.count"].type, sh.value("split.tensors.count")) == \
            (split_gguf.T_INT32, len(src.tensors))


def test_tensors_in_order_and_bytes_equal(shards):
    src = split_gguf.read_gguf(str(MODEL))
    parsed = [split_gguf.read_gguf(p) for p in shards]
    names = [t.name for sh in parsed for t in sh.tensors]
    assert names == [t.name for t in src.tensors]
    # llama.cpp's gguf-split: --split-max-tensors ceil(n/3)
    k = -(-len(src.tensors) // 3)
    assert [len(sh.tensors) for sh in parsed] == \
        [min(k, len(src.tensors) - i * k) for i in range(3)]
    by_name = {t.name: t for t in src.tensors}
    with open(MODEL, "rb") as fin:
        for p, sh in zip(shards, parsed):
            assert sh.data_offset % sh.alignment == 0
            with open(p, "rb") as f:
                for t in sh.tensors:
                    s = by_name[t.name]
                    assert t.type == s.type
                    assert t.offset % sh.alignment == 0
                    fin.seek(src.data_offset + s.offset)
                    f.seek(sh.data_offset + t.offset)
                    assert f.read(s.size) == fin.read(s.size), t.name


def test_cli(model, tmp_path):
    prefix = tmp_path / "cli"
    out = subprocess.run(
        [sys.executable, str(Path(split_gguf.__file__)), str(MODEL), str(prefix),
         "--shards", "2"],
        check=True, capture_output=True, text=True).stdout.split()
    assert out == [f"{prefix}-00001-of-00002.gguf", f"{prefix}-00002-of-00002.gguf"]
    split_gguf.verify(str(MODEL), out)


def test_plan_matches_gguf_split():
    # tensor i starts a new shard when i > 0 and i % K == 0, K = ceil(n / shards)
    assert [len(r) for r in split_gguf.plan(272, 3)] == [91, 91, 90]
    assert [len(r) for r in split_gguf.plan(10, 1)] == [10]
    with pytest.raises(ValueError):
        split_gguf.plan(10, 6)  # K=2 gives 5 shards
    with pytest.raises(ValueError):
        split_gguf.plan(2, 3)


def test_small_synthetic_roundtrip(tmp_path):
    """A hand-built GGUF with odd sizes, an array and a string KV splits and verifies."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    kvs = [
        s("general.architecture") + struct.pack("<i", 8) + s("llama"),
        s("tokenizer.ggml.tokens") + struct.pack("<iiQ", 9, 8, 2) + s("a") + s("bc"),
        s("x.scores") + struct.pack("<iiQ", 9, 6, 3) + struct.pack("<3f", 1, 2, 3),
        s("x.flag") + struct.pack("<i", 7) + b"\x01",
    ]
    # F32 tensors of 3, 8 and 5 elements (12, 32, 20 bytes); one stored with a trailing 1 dim
    tensors = [("a", (3,), 12), ("b", (8, 1), 32), ("c", (5,), 20)]
    infos, off = [], 0
    for name, dims, nbytes in tensors:
        infos.append(s(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}q", *dims)
                     + struct.pack("<iQ", 0, off))
        off += -(-nbytes // 32) * 32
    head = b"GGUF" + struct.pack("<Iqq", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    head += b"\0" * (-len(head) % 32)
    data = b""
    for i, (_, _, nbytes) in enumerate(tensors):
        data += bytes((i * 7 + j) % 251 + 1 for j in range(nbytes))
        data += b"\0" * (-len(data) % 32)
    src = tmp_path / "tiny.gguf"
    src.write_bytes(head + data)

    out = split_gguf.split(str(src), str(tmp_path / "tiny"), 3)
    split_gguf.verify(str(src), out)
    kvs0, tensors0 = split_gguf.read_gguf(out[0])
    assert kvs0["tokenizer.ggml.tokens"].value == ["a", "bc"]
    assert kvs0["x.scores"].value == [1.0, 2.0, 3.0]
    assert kvs0["x.flag"].value is True
    assert [t.name for t in tensors0] == ["a"]
    # written like gguf.cpp's writer: n_dims trimmed as ggml_n_dims does
    assert split_gguf.read_gguf(out[1]).tensors[0].dims == (8,)
