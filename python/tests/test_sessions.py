# SPDX-License-Identifier: Apache-2.0
"""Sessions saved and restored from Python: a runner's cache written to a session file and put back
in another runner, whose next generate() with reuse_cached_prefix prefills only what the file lacks
and generates what the first runner does; without it the cache is reset as before; a file of
another program, a missing one and a damaged one raise with the library's code, leaving the cache
as it was."""
import pytest

import staticlm
from conftest import ROOT

PROMPT = ("In the beginning God created the heaven and the earth. And the earth was without form, and void; "
          "and darkness was upon the face of the deep.")
FOLLOW_UP = PROMPT + " And the Spirit of God moved upon the face of the waters."
GREEDY = dict(max_new_tokens=8, temperature=0)


def export(directory, context):
    path = str(directory / f"kjv_{context}.slm")
    staticlm.export(str(ROOT / "models" / "kjv-llama-6m"), path, prefill_len=64, max_cache_len=context)
    return path


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return export(tmp_path_factory.mktemp("sessions"), 512)


def test_a_restored_session_is_reused_by_the_next_generation(program, tmp_path):
    first = staticlm.runner_for(program, threads=2)
    first.generate(PROMPT, staticlm.GenerationConfig(**GREEDY))
    saved = first.cached_tokens
    assert len(saved) == first.position > 20
    first.save_session(tmp_path / "genesis.session")

    second = staticlm.runner_for(program, threads=2)
    assert second.restore_session(tmp_path / "genesis.session") == len(saved)
    assert second.cached_tokens == saved and second.position == len(saved)
    reused = second.generate(FOLLOW_UP, staticlm.GenerationConfig(**GREEDY, reuse_cached_prefix=True))
    # At least the prompt's first sentence came from the file, and at most what it held.
    assert 20 < reused.stats.cached_prompt_tokens <= len(saved)
    assert reused.stats.prefill_tokens_per_second > 0
    # The first runner's cache holds what the file does: the same tokens follow.
    again = first.generate(FOLLOW_UP, staticlm.GenerationConfig(**GREEDY, reuse_cached_prefix=True))
    assert again.stats.cached_prompt_tokens == reused.stats.cached_prompt_tokens
    assert reused.tokens == again.tokens and reused.text == again.text


def test_without_reuse_the_cache_is_reset_first(program, tmp_path):
    runner = staticlm.runner_for(program, threads=2)
    runner.generate(PROMPT, staticlm.GenerationConfig(**GREEDY))
    runner.save_session(tmp_path / "genesis.session")
    runner.reset()
    runner.restore_session(str(tmp_path / "genesis.session"))
    result = runner.generate(FOLLOW_UP, staticlm.GenerationConfig(**GREEDY))
    assert result.stats.cached_prompt_tokens == 0


def test_files_that_do_not_fit_are_refused_and_the_cache_kept(program, tmp_path):
    runner = staticlm.runner_for(program, threads=2)
    runner.generate(PROMPT, staticlm.GenerationConfig(**GREEDY))
    runner.save_session(tmp_path / "genesis.session")
    before = runner.cached_tokens

    with pytest.raises(staticlm.Error) as missing:
        runner.restore_session(tmp_path / "absent.session")
    assert missing.value.code == "NotFound" and "absent.session" in str(missing.value)

    (tmp_path / "damaged.session").write_bytes(b"not a session file")
    with pytest.raises(staticlm.Error) as damaged:
        runner.restore_session(tmp_path / "damaged.session")
    assert damaged.value.code == "DataLoss"

    other = staticlm.runner_for(export(tmp_path, 256), threads=2)
    with pytest.raises(staticlm.Error) as foreign:
        other.restore_session(tmp_path / "genesis.session")
    assert foreign.value.code == "InvalidArgument" and "saved with another program" in str(foreign.value)
    assert "max_cache_len" in str(foreign.value)  # names what differs
    assert other.position == 0 and runner.cached_tokens == before

    with pytest.raises(staticlm.Error) as unwritable:
        runner.save_session(tmp_path / "no-such-directory" / "x.session")
    assert unwritable.value.code == "Unavailable"
