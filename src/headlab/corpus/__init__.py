"""Corpora: named offline sources and user files → seeded token windows (samples)."""

from headlab.corpus.document import Document
from headlab.corpus.records import TEXT_FIELD
from headlab.corpus.samples import Sample, Sampler, SpecialTokens, repeat_probe, special_tokens, windows
from headlab.corpus.sources import DEFAULT_CORPUS, NAMED_SOURCES, documents

__all__ = ["DEFAULT_CORPUS", "Document", "NAMED_SOURCES", "Sample", "Sampler", "SpecialTokens", "TEXT_FIELD",
           "documents", "repeat_probe", "special_tokens", "windows"]
