# SPDX-License-Identifier: Apache-2.0
"""llama-server's slot actions (POST /slots/{id}?action=save|restore|erase, `serve --slot-save-path`):
a session saved by one server and restored by another reuses its tokens; what a client sends is
checked (names that would leave the directory, slots, actions, another program's file); a slot that
is generating is refused, not touched."""
import json
import os
import socket
import subprocess

from conftest import CLI, read_events

COMPLETIONS = "/v1/completions"
NOT_SUPPORTED = "This server does not support slots action. Start it with `--slot-save-path`"


def prompt_ids(server, text):
    status, _, tokens = server.post("/tokenize", {"content": text})
    assert status == 200
    return tokens["tokens"]


def complete(server, prompt, max_tokens=4):
    status, _, reply = server.post(COMPLETIONS, {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    assert status == 200, reply
    assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] == reply["timings"]["cache_n"]
    return reply


def slot(server, action, body=None, slot_id=0):
    return server.post(f"/slots/{slot_id}?action={action}", body if body is not None else {})


def assert_refused(answer, status, param, fragment):
    code, _, body = answer
    assert code == status, body
    assert body["error"]["param"] == param, body
    assert fragment in body["error"]["message"], body
    assert "\n" not in body["error"]["message"]


def test_without_a_save_path_the_actions_answer_501_as_llama_server(serve):
    server = serve()
    for action in ("save", "restore", "erase"):
        status, _, body = slot(server, action, {"filename": "x.bin"})
        assert status == 501, body
        assert body["error"]["type"] == "not_supported_error" and body["error"]["message"] == NOT_SUPPORTED


def test_a_session_saved_by_one_server_is_reused_by_another(serve, tmp_path):
    first = serve("--slot-save-path", str(tmp_path))
    prompt = prompt_ids(first, "In the beginning God created the heaven and the earth. And the earth was without "
                               "form, and void; and darkness was upon the face of the deep.")
    assert len(prompt) > 20
    fresh = complete(first, prompt)
    assert fresh["timings"]["cache_n"] == 0
    status, _, saved = slot(first, "save", {"filename": "genesis.bin"})
    assert status == 200, saved
    size = os.path.getsize(tmp_path / "genesis.bin")
    # The slot holds the prompt and the generated tokens but the last (sampled, never fed).
    assert saved["id_slot"] == 0 and saved["filename"] == "genesis.bin"
    assert saved["n_saved"] == len(prompt) + fresh["usage"]["completion_tokens"] - 1
    assert saved["n_written"] == size and saved["timings"]["save_ms"] >= 0
    assert not os.path.exists(tmp_path / "genesis.bin.partial")

    # As `curl -X POST .../slots/0?action=erase` sends it: no body, no Content-Length.
    with socket.create_connection(("127.0.0.1", first.port), timeout=5) as sock:
        sock.sendall(b"POST /slots/0?action=erase HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while piece := sock.recv(65536):
            reply += piece
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), reply
    assert json.loads(body) == {"id_slot": 0, "n_erased": saved["n_saved"]}
    assert complete(first, prompt)["timings"]["cache_n"] == 0  # erased: prefilled again

    second = serve("--slot-save-path", str(tmp_path))
    status, _, restored = slot(second, "restore", {"filename": "genesis.bin"})
    assert status == 200, restored
    assert restored["id_slot"] == 0 and restored["filename"] == "genesis.bin"
    assert restored["n_restored"] == saved["n_saved"] and restored["n_read"] == size
    assert restored["timings"]["restore_ms"] >= 0
    # A prompt that starts with the restored tokens prefills only what follows them.
    longer = prompt + prompt_ids(second, " And God said, Let there be light")
    reply = complete(second, longer)
    assert reply["timings"]["cache_n"] >= len(prompt), reply["timings"]
    assert reply["timings"]["prompt_n"] == len(longer) - reply["timings"]["cache_n"]
    # The same text as a server that prefilled all of it.
    assert reply["choices"][0]["text"] == complete(first, longer)["choices"][0]["text"]


def test_names_that_could_leave_the_directory_are_refused(serve, tmp_path):
    server = serve("--slot-save-path", str(tmp_path / "slots"))
    for action in ("save", "restore"):
        for name in ("", "../x.bin", "..", "sub/x.bin", "/tmp/x.bin", ".hidden", "x\nbin"):
            assert_refused(slot(server, action, {"filename": name}), 400, "filename", "plain file name")
        assert_refused(slot(server, action, {}), 400, "filename", "expected a string")
        assert_refused(slot(server, action, {"filename": 7}), 400, "filename", "expected a string")
        assert_refused(server.post(f"/slots/0?action={action}", "not json"), 400, "filename", "")
    assert sorted(os.listdir(tmp_path)) == ["slots"] and os.listdir(tmp_path / "slots") == []


def test_bad_slots_actions_and_files_are_refused_by_name(serve, tmp_path, f32_model):
    server = serve("--slot-save-path", str(tmp_path))
    for slot_id in ("1", "-1", "x", "99999999999"):
        assert_refused(slot(server, "erase", slot_id=slot_id), 400, "id_slot", "expected a slot id in [0, 1)")
    assert_refused(server.post("/slots/0", {}), 400, "action", "expected save, restore or erase, found ''")
    assert_refused(slot(server, "load", {"filename": "x.bin"}), 400, "action", "found 'load'")
    assert_refused(slot(server, "restore", {"filename": "absent.bin"}), 400, "filename", "no session file 'absent.bin'")
    (tmp_path / "damaged.bin").write_bytes(b"not a session")
    assert_refused(slot(server, "restore", {"filename": "damaged.bin"}), 400, "filename", "not a staticlm session")

    complete(server, "In the beginning")
    assert slot(server, "save", {"filename": "bf16.bin"})[0] == 200
    other = serve("--slot-save-path", str(tmp_path), program=f32_model)
    code, _, body = slot(other, "restore", {"filename": "bf16.bin"})
    assert_refused((code, None, body), 400, "filename", "'bf16.bin' was saved with another program")
    assert str(tmp_path) not in body["error"]["message"]  # the client sees its name, not the directory
    assert complete(other, "In the beginning")["timings"]["cache_n"] == 0  # the session is as it was


def test_a_generating_slot_is_refused_and_left_alone(serve, tmp_path, long_model):
    server = serve("--slot-save-path", str(tmp_path), program=long_model)
    connection = server.connection()
    connection.request("POST", COMPLETIONS, json.dumps({"prompt": "In the beginning", "stream": True,
                                                        "max_tokens": 1000, "temperature": 1, "seed": 1}))
    response = connection.getresponse()
    response.readline()  # the first event: generation has started
    for action, body in (("save", {"filename": "busy.bin"}), ("restore", {"filename": "busy.bin"}), ("erase", {})):
        status, headers, answer = slot(server, action, body)
        assert status == 503 and "slot 0 is generating" in answer["error"]["message"], answer
        assert headers.get("Retry-After") == "1"
    events = read_events(response)
    connection.close()
    finish = [choice["finish_reason"] for event in events[:-1] for choice in event["choices"] if choice["finish_reason"]]
    assert finish == ["length"]
    assert os.listdir(tmp_path) == []
    assert slot(server, "save", {"filename": "idle.bin"})[0] == 200  # idle again


def test_slot_actions_need_the_api_key(serve, tmp_path):
    server = serve("--slot-save-path", str(tmp_path), api_key="secret")
    status, _, body = server.post("/slots/0?action=save", {"filename": "x.bin"}, key=False)
    assert status == 401 and os.listdir(tmp_path) == []
    assert server.post("/slots/0?action=save", {"filename": "x.bin"})[0] == 200


def test_a_save_path_that_cannot_be_a_directory_stops_serve_before_listening(model, tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("")
    done = subprocess.run([CLI, "serve", str(model), "--port", "0", "--slot-save-path", str(taken / "slots")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "listening" not in done.stderr
    assert f"--slot-save-path '{taken / 'slots'}': cannot make the directory" in done.stderr, done.stderr
