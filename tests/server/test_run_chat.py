# SPDX-License-Identifier: Apache-2.0
"""`staticlm run --chat` as a user drives it, through a pipe and on a pseudo-terminal: Ctrl-C
(SIGINT) stops the reply being written and the conversation goes on, at the prompt it ends it;
line editing (arrow keys, history, lines past the terminal's 4,095-byte limit, bracketed paste);
commands with CRLF line ends; the oldest turns dropped when the context fills."""
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import tempfile
import termios
import threading
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


class Terminal:
    """`staticlm run --chat` on a pseudo-terminal, as a user's terminal runs it: stdin, stdout and
    stderr on the terminal, which is the process's controlling terminal (Ctrl-C raises SIGINT)."""

    def __init__(self, *args, columns=200):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        environment = dict(os.environ, TERM="xterm", HOME=tempfile.mkdtemp())  # no ~/.editrc

        def take_the_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.process = subprocess.Popen([CLI, "run", *args], stdin=slave, stdout=slave, stderr=slave, env=environment,
                                        start_new_session=True, preexec_fn=take_the_terminal)
        os.close(slave)
        self.output = b""
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO once the process has closed the terminal
                data = b""
            with self.changed:
                if not data:
                    self.closed = True
                    self.changed.notify_all()
                    return
                self.output += data
                self.changed.notify_all()

    def text(self):
        with self.changed:
            return self.output.decode(errors="replace")

    def wait_for(self, fragment, count=1, timeout=60):
        """Waits until `fragment` has appeared `count` times in the output."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.output.decode(errors="replace").count(fragment) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or getattr(self, "closed", False):
                    raise AssertionError(f"no {fragment!r} (x{count}) in:\n{self.output.decode(errors='replace')}")
                self.changed.wait(remaining)

    def wait_for_prompt(self, count=1):
        """Waits for the count-th prompt (the chat turns on bracketed paste just before it; a redrawn
        line repeats the prompt alone), then for libedit to read the terminal raw: it draws the
        prompt first, and what is typed before is read in canonical mode."""
        self.wait_for("\x1b[?2004h> ", count)
        deadline = time.monotonic() + 60
        while termios.tcgetattr(self.master)[3] & termios.ICANON:
            assert time.monotonic() < deadline, "the terminal never left canonical mode"
            time.sleep(0.005)

    def type(self, data):
        data = data.encode() if isinstance(data, str) else data
        while data:  # a terminal takes a long line in pieces
            data = data[os.write(self.master, data):]

    def finish(self, timeout=60):
        try:
            self.process.wait(timeout=timeout)
        finally:
            self.process.kill()
            self.reader.join(10)
            os.close(self.master)
        return self.process.returncode, self.text()


def test_a_line_longer_than_the_terminals_line_limit_reaches_the_model_whole(long_model):
    message = " ".join(["righteousness"] * 320)  # 4,479 bytes: past the 4,095 a canonical-mode terminal keeps
    assert len(message) > 4095
    code, _, err = chat_through_a_pipe(long_model, message + "\n", "-n", "1")
    assert code == 0, err
    (piped,) = turn_stats(err)
    terminal = Terminal(str(long_model), "--chat", "--temp", "0", "-n", "1")
    terminal.wait_for_prompt()
    terminal.type(message + "\r")
    terminal.wait_for_prompt(2)
    terminal.type("/exit\r")
    code, output = terminal.finish()
    assert code == 0, output
    (typed,) = turn_stats(output)
    assert prompt_tokens(typed) == prompt_tokens(piped), output[-2000:]


def test_arrow_keys_edit_the_line_and_recall_the_history(model):
    terminal = Terminal(str(model), "--chat", "--temp", "0", "-n", "1")
    terminal.wait_for_prompt()
    terminal.type("/reset\r")
    terminal.wait_for("[conversation reset]")
    terminal.wait_for_prompt(2)
    terminal.type("\x1b[A\r")  # Up: the last message again
    terminal.wait_for("[conversation reset]", count=2)
    terminal.wait_for_prompt(3)
    terminal.type("/ext\x1b[Di\r")  # Left, then the missing letter: "/exit"
    code, output = terminal.finish()
    assert code == 0, output
    assert "unknown command" not in output and "tok/s" not in output, output


def test_a_pasted_block_of_lines_is_one_message(model):
    # What a terminal in bracketed paste mode sends: the lines between markers, line breaks as CR.
    terminal = Terminal(str(model), "--chat", "--temp", "0", "-n", "1")
    terminal.wait_for_prompt()  # the chat has asked the terminal to mark pastes
    terminal.type("\x1b[200~In the beginning\rGod created the heaven\x1b[201~")
    terminal.type("\r")
    terminal.wait_for_prompt(2)
    terminal.type("\x04")  # Ctrl-D: the end of input
    code, output = terminal.finish()
    assert code == 0, output
    (pasted,) = turn_stats(output)
    # The same two lines joined by a backslash continuation make the same prompt.
    code, _, err = chat_through_a_pipe(model, "In the beginning\\\nGod created the heaven\n", "-n", "1")
    assert code == 0, err
    assert prompt_tokens(pasted) == prompt_tokens(turn_stats(err)[0])


def test_ctrl_c_at_the_prompt_ends_the_conversation_in_a_terminal(model):
    terminal = Terminal(str(model), "--chat", "--temp", "0", "-n", "1")
    terminal.wait_for_prompt()
    terminal.type("\x03")  # the terminal turns it into SIGINT
    code, output = terminal.finish(timeout=20)
    assert code == 0, output


def test_commands_with_crlf_line_ends_help_and_unknown_ones(model):
    code, out, err = chat_through_a_pipe(model, "/help\r\n/xyz\r\n//help\r\n/exit\r\nnever sent\r\n", "-n", "1")
    assert code == 0, err
    for command in ("/help", "/reset", "/exit, /quit"):
        assert command in err
    assert "[unknown command '/xyz': /help lists the commands" in err
    # "//help" sends "/help" to the model: the only turn; /exit ended the chat before "never sent".
    assert len(turn_stats(err)) == 1, err


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
