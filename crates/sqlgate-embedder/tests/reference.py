"""A restatement of a sentence-transformers BERT encoder in NumPy, from the same safetensors:
the reference the in-process embedder is checked against (tests/reference.rs).

Reads JSON from stdin: {"model": folder, "inputs": [{"ids": [...], "types": [...]}, ...]},
one unpadded token sequence per sentence, and writes one vector per sentence as JSON: the
token vectors of the last layer mean-pooled and L2-normalised, computed in float64. It follows
Hugging Face's BertModel (post-layer-norm, exact GELU) and sentence-transformers' Pooling and
Normalize modules; no code of theirs is used.
"""

import json
import math
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        array = np.frombuffer(data[start:end], dtype="<f4").reshape(meta["shape"])
        tensors[name] = array.astype(np.float64)
    return tensors


def erf(x):
    # Abramowitz and Stegun 7.1.26 is too coarse; this is W. J. Cody's rational
    # approximation as restated by numerical recipes' erfc (error below 1.2e-7).
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def main():
    request = json.load(sys.stdin)
    folder = request["model"]
    with open(folder + "/config.json") as f:
        config = json.load(f)
    w = load(folder + "/model.safetensors")
    prefix = "" if "embeddings.word_embeddings.weight" in w else "bert."
    p = lambda name: w[prefix + name]
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    out = []
    for item in request["inputs"]:
        ids = np.array(item["ids"])
        types = np.array(item["types"])
        n = len(ids)
        x = (p("embeddings.word_embeddings.weight")[ids]
             + p("embeddings.position_embeddings.weight")[np.arange(n)]
             + p("embeddings.token_type_embeddings.weight")[types])
        x = layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
        for layer in range(config["num_hidden_layers"]):
            at = lambda name: p(f"encoder.layer.{layer}.{name}")
            dense = lambda h, name: h @ at(name + ".weight").T + at(name + ".bias")
            q = dense(x, "attention.self.query")
            k = dense(x, "attention.self.key")
            v = dense(x, "attention.self.value")
            d = q.shape[1] // heads
            split = lambda m: m.reshape(n, heads, d).transpose(1, 0, 2)
            scores = split(q) @ split(k).transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores = scores / scores.sum(-1, keepdims=True)
            context = (scores @ split(v)).transpose(1, 0, 2).reshape(n, heads * d)
            x = layer_norm(dense(context, "attention.output.dense") + x,
                           at("attention.output.LayerNorm.weight"),
                           at("attention.output.LayerNorm.bias"), eps)
            inner = gelu(dense(x, "intermediate.dense"))
            x = layer_norm(dense(inner, "output.dense") + x,
                           at("output.LayerNorm.weight"), at("output.LayerNorm.bias"), eps)
        pooled = x.mean(0)
        pooled = pooled / max(np.linalg.norm(pooled), 1e-12)
        out.append(pooled.tolist())
    json.dump(out, sys.stdout)


main()
