"""`staticlm run --chat` as a process in a terminal session would drive it: Ctrl-C (SIGINT) stops
the reply being written and the conversation goes on; /exit ends it with status 0; the oldest turns
are dropped when the context fills."""
import re
import signal
import subprocess
import time

from conftest import CLI, export_bundled


def test_ctrl_c_stops_the_reply_and_keeps_the_conversation(model):
    process = subprocess.Popen([CLI, "run", str(model), "--chat", "--temp", "1", "--seed", "3", "-n", "400"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # A 400-token reply takes far longer than the wait below.
        process.stdin.write("Tell me everything.\n")
        process.stdin.flush()
        first = process.stdout.read(8)  # the reply has started streaming
        assert first
        process.send_signal(signal.SIGINT)
        time.sleep(0.2)
        process.stdin.write("And then?\n/exit\n")
        process.stdin.flush()
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    turns = [line for line in err.splitlines() if line.startswith("[") and "tok/s" in line]
    assert len(turns) == 2, err
    assert "stopped by the caller" in turns[0]
    assert "of them cached" in turns[1]


def turn_stats(err):
    return [line for line in err.splitlines() if line.startswith("[") and "tok/s" in line]


def prompt_tokens(stats_line):
    return int(re.search(r"prompt (\d+) tokens", stats_line).group(1))


def chat_through_a_pipe(model, text, *flags):
    done = subprocess.run([CLI, "run", str(model), "--chat", "--temp", "0", *flags], input=text.encode(),
                          capture_output=True, timeout=120)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_the_oldest_turns_make_room_when_the_context_fills(tmp_path):
    small = export_bundled(tmp_path, 128)
    messages = [f"And the {word} said unto them" for word in ("king", "prophet", "angel", "people", "priest")]
    code, out, err = chat_through_a_pipe(small, "\n".join(messages) + "\n", "-n", "24", "--system",
                                         "Answer in the words of scripture.")
    assert code == 0, err
    stats = turn_stats(err)
    assert len(stats) == 5, err
    dropped = re.findall(r"\[(\d+) earliest turns? dropped to make room in the context \(128 tokens\)\]", err)
    assert dropped, err
    # After a drop, the system message's cache is still reused.
    after_drop = err[err.index("earliest turn"):]
    assert " 0 of them cached" not in after_drop.split("\n", 2)[1], err


def test_a_reply_cut_by_the_end_of_the_context_says_so(tmp_path):
    small = export_bundled(tmp_path, 64)
    code, out, err = chat_through_a_pipe(small, "In the beginning God created the heaven and the earth.\n",
                                         "-n", "64")
    assert code == 0, err
    (stats,) = turn_stats(err)
    assert stats.endswith("; context full]"), err
    code, out, err = chat_through_a_pipe(small, "hello\n", "-n", "65")
    assert code == 1 and "-n: a reply cannot be longer than the context; expected at most 64 tokens, found 65" in err
