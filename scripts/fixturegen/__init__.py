# SPDX-License-Identifier: Apache-2.0
"""Helpers for scripts/make_fixtures.py: checkpoint writing, the tokenizer, the reference model."""
