# SPDX-License-Identifier: Apache-2.0
"""POST /v1/embeddings (and llama-server's /embeddings) on the bundled model exported with an
embeddings method: OpenAI's response shape, L2-normalised vectors equal to `staticlm embed
--normalize` on the same texts, float and base64 encodings alike (the official openai npm client
decodes the latter), token-id inputs, and each malformed request refused by name before any work."""
import base64
import json
import shutil
import subprocess

import numpy as np
import pytest
from conftest import CLI, ROOT

TEXTS = ["In the beginning God created the heaven and the earth.", "And the earth was without form, and void."]


@pytest.fixture(scope="module")
def embedding_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("embeddings") / "kjv_embeddings.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(path), "--dtype", "bf16",
                    "--max-cache-len", "128", "--prefill-len", "16", "--embeddings", "mean"],
                   check=True, capture_output=True)
    return path


def cli_embeddings(program, texts):
    args = [CLI, "embed", str(program), "--normalize", "--threads", "2"]
    for text in texts:
        args += ["-p", text]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_embeddings_are_the_clis_normalised_ones(serve, embedding_model):
    server = serve("--parallel", "2", "--threads", "2", program=embedding_model)
    status, _, body = server.post("/v1/embeddings", {"input": TEXTS, "model": "kjv", "user": "someone"})
    assert status == 200, body
    assert body["object"] == "list" and isinstance(body["model"], str) and body["model"]
    expected = cli_embeddings(embedding_model, TEXTS)
    assert [item["index"] for item in body["data"]] == [0, 1]
    for item, line in zip(body["data"], expected):
        assert item["object"] == "embedding"
        vector = np.array(item["embedding"])
        assert vector.shape == (len(line["embedding"]),)
        assert abs(np.linalg.norm(vector) - 1) < 1e-5
        np.testing.assert_allclose(vector, line["embedding"], rtol=0, atol=1e-5)
    assert body["usage"] == {"prompt_tokens": sum(line["n_tokens"] for line in expected),
                             "total_tokens": sum(line["n_tokens"] for line in expected)}
    assert not np.allclose(body["data"][0]["embedding"], body["data"][1]["embedding"])

    # base64: the same floats, little-endian float32.
    status, _, encoded = server.post("/embeddings", {"input": TEXTS, "encoding_format": "base64"})
    assert status == 200, encoded
    for item, plain in zip(encoded["data"], body["data"]):
        decoded = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
        np.testing.assert_array_equal(decoded, np.array(plain["embedding"], dtype=np.float32))

    # Token ids: the text's own tokens give the text's embedding.
    status, _, tokenized = server.post("/tokenize", {"content": TEXTS[0], "add_special": True})
    assert status == 200, tokenized
    for input_ in (tokenized["tokens"], [tokenized["tokens"]]):
        status, _, by_ids = server.post("/v1/embeddings", {"input": input_})
        assert status == 200, by_ids
        assert by_ids["data"][0]["embedding"] == body["data"][0]["embedding"]


def test_an_embedding_leaves_the_cache_a_completion_reuses(serve, embedding_model):
    server = serve("--threads", "2", program=embedding_model)
    ask = {"prompt": TEXTS[0], "max_tokens": 6, "temperature": 0}
    status, _, fresh = server.post("/v1/completions", ask)
    assert status == 200 and fresh["timings"]["cache_n"] == 0, fresh
    for text in (TEXTS[1], TEXTS[0]):  # the session's cache then holds TEXTS[0], as embedded
        status, _, body = server.post("/v1/embeddings", {"input": text})
        assert status == 200, body
    status, _, reused = server.post("/v1/completions", ask)
    assert status == 200, reused
    assert reused["timings"]["cache_n"] == reused["usage"]["prompt_tokens"] - 1
    assert reused["choices"][0]["text"] == fresh["choices"][0]["text"]


def test_the_official_openai_client(serve, embedding_model):
    node_modules = ROOT / "tests" / "server" / "node_modules"
    if shutil.which("node") is None or not node_modules.is_dir():
        pytest.fail("node and tests/server/node_modules are needed: run scripts/install-deps")
    server = serve(program=embedding_model)
    done = subprocess.run(["node", str(ROOT / "tests" / "server" / "openai_embeddings_test.mjs"),
                           f"http://127.0.0.1:{server.port}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(done.stdout)
    status, _, body = server.post("/v1/embeddings", {"input": TEXTS})
    assert status == 200, body
    for decoded, floats, plain in zip(got["base64"], got["float"], body["data"]):
        np.testing.assert_array_equal(np.array(decoded, dtype=np.float32), np.array(plain["embedding"], np.float32))
        assert floats == plain["embedding"]


MALFORMED = [
    ({"input": []}, "input", "expected a string or a non-empty array"),
    ({"input": 5}, "input", "expected a string or a non-empty array"),
    ({"input": [[]]}, "input", "input 0 has no tokens"),
    ({"input": [1, 100000]}, "input", "expected token ids in [0,"),
    ({"input": ["ok", {"text": "no"}]}, "input", "expected strings or arrays of token ids, found object"),
    ({"input": "word " * 200}, "input", "tokens; the context holds 128"),
    ({"input": "hi", "encoding_format": "int8"}, "encoding_format", 'expected "float" or "base64"'),
    ({"input": "hi", "dimensions": 8}, "dimensions", "cannot be shortened"),
    ({"input": "hi", "truncate": True}, "truncate", "unrecognized request argument"),
    ({"model": "kjv"}, "input", "missing"),
]


def test_malformed_requests_are_refused_by_name(serve, embedding_model):
    server = serve(program=embedding_model)
    for request_body, param, fragment in MALFORMED:
        status, _, body = server.post("/v1/embeddings", request_body)
        assert status == 400, (request_body, body)
        assert body["error"]["param"] == param and fragment in body["error"]["message"], (request_body, body)


def test_a_program_without_the_method_answers_501(serve):
    server = serve()
    status, _, body = server.post("/v1/embeddings", {"input": "hello"})
    assert status == 501, body
    assert "no embeddings method" in body["error"]["message"] and "--embeddings" in body["error"]["message"]


def test_the_cli_reads_a_file_of_texts(tmp_path, embedding_model):
    texts = tmp_path / "texts.txt"
    texts.write_text(TEXTS[0] + "\n\n" + TEXTS[1] + "\r\n")
    done = subprocess.run([CLI, "embed", str(embedding_model), "-f", str(texts), "--normalize", "--threads", "2"],
                          capture_output=True, text=True, check=True)
    from_file = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["index"] for line in from_file] == [0, 1]
    assert from_file == cli_embeddings(embedding_model, TEXTS)
