#!/usr/bin/env python3
"""Split a GGUF file into N shards the way llama.cpp's ``llama-gguf-split`` does.

    python3 tests/hub/split_gguf.py INPUT.gguf OUTPUT_PREFIX --shards N [--verify]

writes ``OUTPUT_PREFIX-00001-of-0000N.gguf`` ... ``OUTPUT_PREFIX-0000N-of-0000N.gguf``
and prints one shard path per line.  llama.cpp loads the model when given the
path of the first shard: it reads ``split.count`` from that file and derives the
other paths from its name.

This reproduces ``llama-gguf-split --split --split-max-tensors K INPUT OUTPUT_PREFIX``
with ``K = ceil(n_tensors / N)`` (llama.cpp tools/gguf-split/gguf-split.cpp,
``split_strategy``):

* shard names: ``"%s-%05d-of-%05d.gguf" % (prefix, i + 1, n)`` (``llama_split_path``
  in src/llama.cpp);
* shard 1 holds every KV pair of the input, in order, followed by the split KVs;
  the other shards hold only the split KVs.  The split KVs are ``split.no`` (u16,
  0-based), ``split.tensors.count`` (i32, tensors in the whole model) and
  ``split.count`` (u16) - in that order, because gguf-split first writes a
  ``split.count`` placeholder and later sets it again, and ``gguf_set_val_*``
  removes a key and appends it at the end;
* tensors keep the input's order; a new shard starts at every tensor index
  ``i > 0`` with ``i % K == 0``;
* each shard is GGUF v3: header, KVs, tensor infos (``n_dims`` trimmed as
  ``ggml_n_dims`` does), zero padding to the alignment, then each tensor's data
  followed by zero padding to the alignment.

Tensor byte sizes are not computed from ggml types: GGUF requires tensor data to
be stored contiguously in info order, each padded to the alignment, so a
tensor's size up to padding is the distance to the next tensor's offset (or to
the end of the file for the last one).  Those bytes are copied and re-padded.

One deliberate difference: gguf-split always pads shards to 32 bytes even when
the input sets another ``general.alignment`` (which then makes shard 1 invalid).
Here every shard uses the input's alignment, and when that alignment is not 32 the
later shards also get a ``general.alignment`` KV.  For inputs with the default
alignment (32, the usual case) the output is the same as gguf-split's.

Standard library only.  Importable: ``split(input_path, output_prefix, shards)``,
``read_gguf(path)``, ``verify(input_path, shard_paths)``.
"""

from __future__ import annotations

import argparse
import math
import mmap
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
GGUF_DEFAULT_ALIGNMENT = 32
GGML_MAX_DIMS = 4
KEY_ALIGNMENT = "general.alignment"
KEY_SPLIT_NO = "split.no"
KEY_SPLIT_COUNT = "split.count"
KEY_SPLIT_TENSORS_COUNT = "split.tensors.count"
SPLIT_KEYS = (KEY_SPLIT_NO, KEY_SPLIT_COUNT, KEY_SPLIT_TENSORS_COUNT)

# enum gguf_type (ggml/include/gguf.h)
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32 = range(7)
T_BOOL, T_STRING, T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = range(7, 13)

# little-endian struct formats of the fixed-size gguf types
_SCALAR_FMT = {
    T_UINT8: "B", T_INT8: "b", T_UINT16: "H", T_INT16: "h",
    T_UINT32: "I", T_INT32: "i", T_FLOAT32: "f", T_BOOL: "?",
    T_UINT64: "Q", T_INT64: "q", T_FLOAT64: "d",
}


class GGUFError(ValueError):
    pass


@dataclass
class KV:
    key: str
    type: int                 # gguf_type of the value, or of the elements for arrays
    value: Any                # scalar, str, or list for arrays
    is_array: bool
    raw: bytes                # the serialized key/type/value exactly as in the file


@dataclass
class TensorInfo:
    name: str
    dims: Tuple[int, ...]     # ne[0..n_dims) as stored
    type: int                 # ggml_type
    offset: int               # relative to the data section
    size: int = 0             # bytes up to the next tensor (or end of file): nbytes up to padding


@dataclass
class GGUFFile:
    path: str
    version: int
    kvs: Dict[str, KV]        # insertion-ordered, as in the file
    tensors: List[TensorInfo] # in info order
    alignment: int
    data_offset: int          # absolute file offset of the data section
    file_size: int
    meta_size: int = field(default=0)  # bytes before the data section

    def __iter__(self) -> Iterator[Any]:
        # allows `kvs, tensors = read_gguf(path)`
        yield self.kvs
        yield self.tensors

    def value(self, key: str, default: Any = None) -> Any:
        kv = self.kvs.get(key)
        return default if kv is None else kv.value


def _pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


class _Reader:
    def __init__(self, buf: Any) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(f"truncated GGUF: need {n} bytes at offset {self.pos}")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self.take(size))[0]

    def string(self) -> str:
        n = self.unpack("Q")
        return self.take(n).decode("utf-8", errors="surrogateescape")

    def value(self, typ: int) -> Any:
        if typ == T_STRING:
            return self.string()
        fmt = _SCALAR_FMT.get(typ)
        if fmt is None:
            raise GGUFError(f"invalid GGUF value type {typ} at offset {self.pos}")
        return self.unpack(fmt)

    def array(self, typ: int, n: int) -> List[Any]:
        if typ == T_STRING:
            return [self.string() for _ in range(n)]
        fmt = _SCALAR_FMT.get(typ)
        if fmt is None:  # nested arrays are rejected by gguf.cpp too
            raise GGUFError(f"invalid GGUF array element type {typ} at offset {self.pos}")
        size = struct.calcsize("<" + fmt) * n
        return list(struct.unpack(f"<{n}{fmt}", self.take(size)))


def read_gguf(path: str) -> GGUFFile:
    """Parse a GGUF (v2/v3) file's header, KV pairs and tensor infos."""
    file_size = os.path.getsize(path)
    with open(path, "rb") as f:
        if file_size == 0:
            raise GGUFError(f"{path}: empty file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _parse(path, mm, file_size)


def _parse(path: str, buf: Any, file_size: int) -> GGUFFile:
    r = _Reader(buf)
    magic = r.take(4)
    if magic != GGUF_MAGIC:
        raise GGUFError(f"{path}: bad magic {magic!r}")
    version = r.unpack("I")
    if version < 2 or version > GGUF_VERSION:
        raise GGUFError(f"{path}: unsupported GGUF version {version}")
    n_tensors = r.unpack("q")
    n_kv = r.unpack("q")
    if n_tensors < 0 or n_kv < 0:
        raise GGUFError(f"{path}: negative tensor/kv count")

    kvs: Dict[str, KV] = {}
    for _ in range(n_kv):
        start = r.pos
        key = r.string()
        typ = r.unpack("i")
        if typ == T_ARRAY:
            etyp = r.unpack("i")
            n = r.unpack("Q")
            val: Any = r.array(etyp, n)
            kv = KV(key, etyp, val, True, b"")
        else:
            kv = KV(key, typ, r.value(typ), False, b"")
        kv.raw = bytes(buf[start:r.pos])
        if key in kvs:
            raise GGUFError(f"{path}: duplicate key {key!r}")
        kvs[key] = kv

    alignment = GGUF_DEFAULT_ALIGNMENT
    if KEY_ALIGNMENT in kvs:
        a = kvs[KEY_ALIGNMENT]
        if a.is_array or a.type != T_UINT32:
            raise GGUFError(f"{path}: {KEY_ALIGNMENT} must be u32")
        alignment = a.value
        if alignment == 0 or alignment & (alignment - 1):
            raise GGUFError(f"{path}: alignment {alignment} is not a power of 2")

    tensors: List[TensorInfo] = []
    names = set()
    for _ in range(n_tensors):
        name = r.string()
        if name in names:
            raise GGUFError(f"{path}: duplicate tensor {name!r}")
        names.add(name)
        n_dims = r.unpack("I")
        if n_dims > GGML_MAX_DIMS:
            raise GGUFError(f"{path}: tensor {name!r} has {n_dims} dims")
        dims = tuple(r.unpack("q") for _ in range(n_dims))
        ttype = r.unpack("i")
        offset = r.unpack("Q")
        tensors.append(TensorInfo(name, dims, ttype, offset))

    meta_end = r.pos
    data_offset = _pad(meta_end, alignment) if n_tensors > 0 else meta_end
    if data_offset > file_size:
        raise GGUFError(f"{path}: data section starts past the end of the file")
    data_size = file_size - data_offset

    # sizes from the offsets: distance to the next tensor's data, or to the end
    order = sorted(range(len(tensors)), key=lambda i: tensors[i].offset)
    for j, i in enumerate(order):
        t = tensors[i]
        end = tensors[order[j + 1]].offset if j + 1 < len(order) else data_size
        if t.offset % alignment or end < t.offset:
            raise GGUFError(f"{path}: tensor {t.name!r} has a bad offset {t.offset}")
        t.size = end - t.offset
    return GGUFFile(path, version, kvs, tensors, alignment, data_offset, file_size,
                    meta_size=data_offset)


# ---------------------------------------------------------------- writing

def _w_string(s: str) -> bytes:
    b = s.encode("utf-8", errors="surrogateescape")
    return struct.pack("<Q", len(b)) + b


def _w_kv_scalar(key: str, typ: int, value: Any) -> bytes:
    return _w_string(key) + struct.pack("<i", typ) + struct.pack("<" + _SCALAR_FMT[typ], value)


def _n_dims(dims: Sequence[int]) -> int:
    # ggml_n_dims: index of the last dim > 1, plus one; at least 1
    for i in range(len(dims) - 1, 0, -1):
        if dims[i] > 1:
            return i + 1
    return 1


def _w_tensor_info(t: TensorInfo, offset: int) -> bytes:
    nd = _n_dims(t.dims)
    dims = list(t.dims[:nd]) + [1] * (nd - len(t.dims))
    return (_w_string(t.name) + struct.pack("<I", nd) + struct.pack(f"<{nd}q", *dims)
            + struct.pack("<iQ", t.type, offset))


def split_path(prefix: str, split_no: int, split_count: int) -> str:
    """llama_split_path: split_no is 0-based."""
    return "%s-%05d-of-%05d.gguf" % (prefix, split_no + 1, split_count)


def plan(n_tensors: int, shards: int) -> List[range]:
    """Tensor index ranges per shard for gguf-split --split-max-tensors ceil(n/shards)."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    if n_tensors < shards:
        raise ValueError(f"cannot split {n_tensors} tensors into {shards} shards")
    k = math.ceil(n_tensors / shards)
    ranges = [range(s, min(s + k, n_tensors)) for s in range(0, n_tensors, k)]
    if len(ranges) != shards:
        raise ValueError(
            f"--split-max-tensors {k} (= ceil({n_tensors}/{shards})) gives {len(ranges)} "
            f"shards, not {shards}; no tensor limit splits {n_tensors} tensors into "
            f"exactly {shards} shards")
    return ranges


_COPY_CHUNK = 16 << 20


def _copy(src: Any, dst: Any, offset: int, size: int) -> None:
    src.seek(offset)
    left = size
    while left:
        b = src.read(min(_COPY_CHUNK, left))
        if not b:
            raise GGUFError("unexpected end of input while copying tensor data")
        dst.write(b)
        left -= len(b)


def split(input_path: str, output_prefix: str, shards: int) -> List[str]:
    """Split input_path into `shards` files; return their paths (first one first)."""
    src = read_gguf(input_path)
    n = len(src.tensors)
    ranges = plan(n, shards)
    align = src.alignment
    n_split = len(ranges)

    model_kvs = [kv.raw for key, kv in src.kvs.items() if key not in SPLIT_KEYS]
    paths = []
    d = os.path.dirname(output_prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(input_path, "rb") as fin:
        for i_split, rng in enumerate(ranges):
            kvs: List[bytes] = []
            if i_split == 0:
                kvs.extend(model_kvs)
            elif align != GGUF_DEFAULT_ALIGNMENT:
                kvs.append(_w_kv_scalar(KEY_ALIGNMENT, T_UINT32, align))
            kvs.append(_w_kv_scalar(KEY_SPLIT_NO, T_UINT16, i_split))
            kvs.append(_w_kv_scalar(KEY_SPLIT_TENSORS_COUNT, T_INT32, n))
            kvs.append(_w_kv_scalar(KEY_SPLIT_COUNT, T_UINT16, n_split))

            infos = []
            offset = 0
            tensors = [src.tensors[i] for i in rng]
            for t in tensors:
                infos.append(_w_tensor_info(t, offset))
                offset += _pad(t.size, align)

            head = (GGUF_MAGIC + struct.pack("<Iqq", GGUF_VERSION, len(tensors), len(kvs))
                    + b"".join(kvs) + b"".join(infos))
            head += b"\0" * (_pad(len(head), align) - len(head))

            path = split_path(output_prefix, i_split, n_split)
            tmp = path + ".tmp"
            with open(tmp, "wb") as fout:
                fout.write(head)
                for t in tensors:
                    _copy(fin, fout, src.data_offset + t.offset, t.size)
                    fout.write(b"\0" * (_pad(t.size, align) - t.size))
            os.replace(tmp, path)
            paths.append(path)
    return paths


# ---------------------------------------------------------------- checking

def _same_bytes(fa: Any, oa: int, fb: Any, ob: int, size: int) -> bool:
    fa.seek(oa)
    fb.seek(ob)
    left = size
    while left:
        n = min(_COPY_CHUNK, left)
        if fa.read(n) != fb.read(n):
            return False
        left -= n
    return True


def _all_zero(f: Any, offset: int, size: int) -> bool:
    f.seek(offset)
    return f.read(size).count(0) == size


def verify(input_path: str, shard_paths: Sequence[str]) -> Dict[str, Any]:
    """Check the shards against the input; raise AssertionError on a mismatch.

    Checks: every shard parses; split.no/split.count/split.tensors.count are
    right and typed u16/u16/i32; shard 1 has every input KV (same type and
    bytes) plus the split KVs, the others only split KVs (and general.alignment
    when it is not 32); names follow llama_split_path; tensor names, order,
    shapes and types match the input and add up to its count; every tensor's
    bytes equal the input's (the re-padding being zeros).
    """
    src = read_gguf(input_path)
    n_split = len(shard_paths)
    shards = [read_gguf(p) for p in shard_paths]
    prefix = shard_paths[0][: -len("-00001-of-%05d.gguf" % n_split)]
    for i, (p, sh) in enumerate(zip(shard_paths, shards)):
        assert p == split_path(prefix, i, n_split), f"{p}: not named like llama_split_path"
        assert sh.version == GGUF_VERSION, f"{p}: version {sh.version}"
        for key, typ, want in ((KEY_SPLIT_NO, T_UINT16, i),
                               (KEY_SPLIT_COUNT, T_UINT16, n_split),
                               (KEY_SPLIT_TENSORS_COUNT, T_INT32, len(src.tensors))):
            kv = sh.kvs.get(key)
            assert kv is not None, f"{p}: missing {key}"
            assert kv.type == typ and not kv.is_array, f"{p}: {key} has type {kv.type}"
            assert kv.value == want, f"{p}: {key} = {kv.value}, want {want}"
        extra = set(sh.kvs) - set(SPLIT_KEYS)
        if i == 0:
            for key, kv in src.kvs.items():
                if key in SPLIT_KEYS:
                    continue
                assert key in sh.kvs, f"{p}: missing input KV {key}"
                assert sh.kvs[key].raw == kv.raw, f"{p}: KV {key} differs from the input"
            assert extra == set(src.kvs) - set(SPLIT_KEYS), f"{p}: unexpected KVs"
        else:
            allowed = {KEY_ALIGNMENT} if src.alignment != GGUF_DEFAULT_ALIGNMENT else set()
            assert extra <= allowed, f"{p}: shard has model KVs {sorted(extra)[:5]}"
        assert sh.alignment == src.alignment, f"{p}: alignment {sh.alignment}"
        assert sh.tensors, f"{p}: no tensors"
        # the loader (gguf.cpp) wants offsets contiguous in info order
        expect = 0
        for t in sh.tensors:
            assert t.offset == expect, f"{p}: tensor {t.name} at {t.offset}, want {expect}"
            expect += _pad(t.size, sh.alignment)
        assert sh.data_offset + expect == sh.file_size, f"{p}: trailing bytes"

    got = [(p, sh, t) for p, sh in zip(shard_paths, shards) for t in sh.tensors]
    assert len(got) == len(src.tensors), \
        f"{len(got)} tensors in the shards, {len(src.tensors)} in the input"
    with open(input_path, "rb") as fin:
        handles = {p: open(p, "rb") for p in shard_paths}
        try:
            for (p, sh, t), s in zip(got, src.tensors):
                assert t.name == s.name, f"tensor order: {t.name} != {s.name}"
                nd = _n_dims(s.dims)
                want = (tuple(s.dims) + (1,) * nd)[:nd]
                assert t.dims == want, f"{t.name}: dims {t.dims} != {s.dims}"
                assert t.type == s.type, f"{t.name}: type {t.type} != {s.type}"
                assert t.size == _pad(s.size, sh.alignment), f"{t.name}: size {t.size} vs {s.size}"
                f = handles[p]
                assert _same_bytes(fin, src.data_offset + s.offset,
                                   f, sh.data_offset + t.offset, s.size), \
                    f"{p}: tensor {t.name} bytes differ from the input"
                assert _all_zero(f, sh.data_offset + t.offset + s.size, t.size - s.size), \
                    f"{p}: tensor {t.name} padding is not zero"
        finally:
            for h in handles.values():
                h.close()
    return {
        "shards": n_split,
        "tensors": [len(sh.tensors) for sh in shards],
        "kvs": [len(sh.kvs) for sh in shards],
        "input_kvs": len(src.kvs),
        "input_tensors": len(src.tensors),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description="Split a GGUF file into N shards like llama-gguf-split --split-max-tensors.")
    ap.add_argument("input", help="input .gguf file")
    ap.add_argument("output_prefix", help="shards are written as PREFIX-0000i-of-0000N.gguf")
    ap.add_argument("--shards", type=int, required=True, help="number of shards")
    ap.add_argument("--verify", action="store_true",
                    help="re-read the shards and compare them with the input (to stderr)")
    args = ap.parse_args(argv)
    try:
        paths = split(args.input, args.output_prefix, args.shards)
    except (GGUFError, ValueError, OSError) as e:
        print(f"split_gguf: {e}", file=sys.stderr)
        return 1
    for p in paths:
        print(p)
    if args.verify:
        print(f"verified: {verify(args.input, paths)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
