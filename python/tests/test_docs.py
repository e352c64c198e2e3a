# SPDX-License-Identifier: Apache-2.0
"""docs/python.md's examples run as written (in order, in one namespace, from the repository
root, as a reader would paste them)."""
import os
import re

from conftest import ROOT


def test_the_examples_in_docs_python_md_run(monkeypatch, capsys):
    text = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(ROOT)
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "['cpu', 'qnn']" in printed
    assert "int8_g32" in printed
    assert "(1, 1, 4096)" in printed
    assert "stop_string" in printed and "[1, 1036, 261, 2097]" in printed
