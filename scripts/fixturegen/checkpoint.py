# SPDX-License-Identifier: Apache-2.0
"""Random BF16 weights and hand-written safetensors files (single file or sharded with an index).

safetensors layout: an 8-byte little-endian header length N, N bytes of JSON header
({"__metadata__": {...}, name: {"dtype", "shape", "data_offsets": [begin, end]}}, padded with
spaces to a multiple of 8), then the raw tensor bytes. Offsets are relative to the end of the
header and must tile the data contiguously (the Rust reader rejects holes), so every tensor here
is a multiple of 8 bytes and starts 8-byte aligned without padding.
"""

import json
import struct

import numpy as np


def float32_to_bf16_bits(values):
    """Rounds float32 values to bfloat16 (round to nearest, ties to even); returns uint16 bits."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    if not np.all(np.isfinite(values)):
        raise ValueError("weights must be finite")
    rounding = ((bits >> 16) & 1) + 0x7FFF
    return ((bits + rounding) >> 16).astype(np.uint16)


def bf16_bits_to_float64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class WeightMaker:
    """Draws weights from a legacy RandomState (its stream is frozen across NumPy versions)."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.tensors = {}  # name -> uint16 bf16 bits, in Hugging Face state_dict order

    def normal(self, name, shape, std, mean=0.0):
        values = mean + std * self.rng.standard_normal(size=shape)
        self.tensors[name] = float32_to_bf16_bits(values.astype(np.float32))

    def linear(self, name, out_features, in_features, gain=1.0):
        # std gain/sqrt(fan_in): the output is `gain` times the scale of the input.
        self.normal(name, (out_features, in_features), gain / np.sqrt(in_features))

    def norm(self, name, size):
        self.normal(name, (size,), 0.1, mean=1.0)


def _safetensors_bytes(tensors):
    names = sorted(tensors)
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in names:
        nbytes = tensors[name].nbytes
        if nbytes % 8 != 0:
            raise ValueError(f"tensor '{name}' is {nbytes} bytes; this writer needs multiples of 8")
        header[name] = {
            "dtype": "BF16",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    data = b"".join(tensors[name].astype("<u2").tobytes() for name in names)
    return struct.pack("<Q", len(header_bytes)) + header_bytes + data


def write_safetensors(path, tensors):
    path.write_bytes(_safetensors_bytes(tensors))


def read_safetensors(path):
    """Reads a BF16-only safetensors file back (used to self-check the writer)."""
    blob = path.read_bytes()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + header_len].decode("utf-8"))
    data = blob[8 + header_len :]
    tensors = {}
    expected_begin = 0
    for name, entry in sorted(
        ((n, e) for n, e in header.items() if n != "__metadata__"), key=lambda item: item[1]["data_offsets"][0]
    ):
        begin, end = entry["data_offsets"]
        if begin != expected_begin or entry["dtype"] != "BF16":
            raise ValueError(f"{path}: tensor '{name}' is not contiguous BF16")
        tensors[name] = np.frombuffer(data[begin:end], dtype="<u2").reshape(entry["shape"]).astype(np.uint16)
        expected_begin = end
    if expected_begin != len(data):
        raise ValueError(f"{path}: {len(data) - expected_begin} trailing bytes after the last tensor")
    return tensors


def write_sharded(directory, tensors, shard_of):
    """Writes model-0000k-of-0000n.safetensors plus model.safetensors.index.json.

    shard_of(name) -> 0-based shard index.
    """
    shard_count = 1 + max(shard_of(name) for name in tensors)
    file_names = [f"model-{k + 1:05d}-of-{shard_count:05d}.safetensors" for k in range(shard_count)]
    for k, file_name in enumerate(file_names):
        write_safetensors(directory / file_name, {n: t for n, t in tensors.items() if shard_of(n) == k})
    index = {
        "metadata": {"total_size": sum(t.nbytes for t in tensors.values())},
        "weight_map": {name: file_names[shard_of(name)] for name in sorted(tensors)},
    }
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return file_names


def read_sharded(directory):
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    tensors = {}
    for file_name in sorted(set(index["weight_map"].values())):
        for name, value in read_safetensors(directory / file_name).items():
            if index["weight_map"].get(name) != file_name:
                raise ValueError(f"{file_name}: tensor '{name}' is not mapped to this shard by the index")
            tensors[name] = value
    if set(tensors) != set(index["weight_map"]):
        raise ValueError(f"{directory}: index and shards disagree on the tensor set")
    if sum(t.nbytes for t in tensors.values()) != index["metadata"]["total_size"]:
        raise ValueError(f"{directory}: metadata.total_size does not match the tensors")
    return tensors
