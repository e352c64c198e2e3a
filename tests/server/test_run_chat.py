"""`staticlm run --chat` as a process in a terminal session would drive it: Ctrl-C (SIGINT) stops
the reply being written and the conversation goes on; /exit ends it with status 0."""
import signal
import subprocess
import time

from conftest import CLI


def test_ctrl_c_stops_the_reply_and_keeps_the_conversation(model):
    process = subprocess.Popen([CLI, "run", str(model), "--chat", "--temp", "1", "--seed", "3"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # No -n: the reply runs until the context is full, far longer than the wait below.
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
