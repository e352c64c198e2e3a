# SPDX-License-Identifier: Apache-2.0
"""Speculative decoding from Python on the bundled model: prompt lookup and a draft program give
the text plain decoding gives, with what they guessed and kept in Result.stats.speculation; a
program that keeps only the last logits, a draft with another tokenizer and two proposers at once
are refused with the C++ message."""
import pytest

import staticlm
from conftest import ROOT

# A verse and its opening again: prompt lookup finds what follows.
PROMPT = ("And God said, Let there be light: and there was light. And God saw the light, that it was good: "
          "and God divided the light from the darkness. And God said, Let there be")
# Greedy without the program's repetition penalty, so a draft program's greedy guesses are the target's.
GREEDY = staticlm.GenerationConfig(max_new_tokens=48, temperature=0, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speculation")
    model = str(ROOT / "models" / "kjv-llama-6m")
    paths = {"all": str(folder / "kjv.slm"), "last": str(folder / "kjv_last.slm")}
    # On the portable kernels a chunk's row and a decode step sum in one order: the tokens are equal.
    staticlm.export(model, paths["all"], prefill_len=64, max_cache_len=512, partitioner="none")
    staticlm.export(model, paths["last"], prefill_len=64, max_cache_len=512, logits="last")
    return paths


def test_lookup_and_a_draft_give_plain_decodings_text(programs):
    plain = staticlm.TextLLMRunner(programs["all"], threads=2).generate(PROMPT, GREEDY)
    assert plain.stats.speculation == {"drafted": 0, "accepted": 0, "checks": 0}

    looked = staticlm.TextLLMRunner(programs["all"], threads=2, lookup=3).generate(PROMPT, GREEDY)
    assert looked.text == plain.text and looked.tokens == plain.tokens
    assert 0 < looked.stats.speculation["accepted"] <= looked.stats.speculation["drafted"]

    # The program as its own draft: each of its guesses is kept.
    drafted = staticlm.TextLLMRunner(programs["all"], threads=2, draft=programs["all"], draft_p_min=0.0)
    result = drafted.generate(PROMPT, GREEDY)
    assert result.tokens == plain.tokens
    assert result.stats.speculation["accepted"] == result.stats.speculation["drafted"] > 0


def test_refusals_carry_the_cpp_message(programs, tmp_path):
    with pytest.raises(staticlm.Error, match="--logits all"):
        staticlm.TextLLMRunner(programs["last"], lookup=2)
    with pytest.raises(staticlm.Error, match="not both"):
        staticlm.TextLLMRunner(programs["all"], lookup=2, draft=programs["all"])
    with pytest.raises(staticlm.Error, match=r"\[1, 64\]"):
        staticlm.TextLLMRunner(programs["all"], lookup=2, draft_max=0)
    other = str(tmp_path / "qwen3.slm")
    staticlm.export(str(ROOT / "tests" / "fixtures" / "qwen3"), other, prefill_len=8, max_cache_len=64)
    with pytest.raises(staticlm.Error, match="tokenizer"):
        staticlm.TextLLMRunner(programs["all"], draft=other)
