"""Helpers for scripts/make_fixtures.py: checkpoint writing, the tokenizer, the reference model."""
