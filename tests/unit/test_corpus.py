import gzip
import json

import pytest

from headlab.corpus import Document, Sampler, documents, windows
from headlab.corpus.files import file_documents
from headlab.errors import HeadlabError
from tests.support import says


class CharTokenizer:
    """A tokenizer with the call signature Sampler uses: one id per character, [CLS]=1 ... [SEP]=2."""

    def __call__(self, text, add_special_tokens=True, **_):
        def enc(t):
            body = [ord(c) for c in t]
            return [1] + body + [2] if add_special_tokens else body
        if isinstance(text, list):
            return {"input_ids": [enc(t) for t in text]}
        return {"input_ids": enc(text)}


@pytest.mark.parametrize("n,body,stride", [(10, 4, 4), (10, 4, 3), (4, 4, 4), (1, 5, 5), (13, 5, 2)])
def test_windows_cover_every_token(n, body, stride):
    ids = list(range(n))
    ws = list(windows(ids, body, stride))
    assert all(1 <= len(w) <= body for w in ws)
    assert sorted(set(t for w in ws for t in w)) == ids   # nothing dropped
    assert ws[-1][-1] == ids[-1]
    if stride == body:
        assert sum(len(w) for w in ws) == n                # non-overlapping: each token once


def test_windows_reject_skipping_strides():
    with pytest.raises(HeadlabError, match="skipped"):
        list(windows([1, 2, 3], 2, 3))


def test_sampler_windows_long_texts_and_adds_special_tokens():
    s = Sampler(CharTokenizer(), length=6, seed=0)
    assert s.special.prefix == (1,) and s.special.suffix == (2,)
    out = list(s.samples([Document("d", lambda: ["abcdefghij"])]))
    assert [x.input_ids for x in out if x.window == 0][0] == (1, 97, 98, 99, 100, 2)
    bodies = sorted((x.window, x.input_ids[1:-1]) for x in out)
    assert "".join(chr(i) for _, b in bodies for i in b) == "abcdefghij"  # never truncated


def test_sampler_is_seeded_and_filters_targets():
    docs = [Document(f"d{i}", lambda i=i: [f"text {i} a/b" if i % 3 == 0 else f"text {i}"]) for i in range(60)]
    a = [x.input_ids for x in Sampler(CharTokenizer(), 32, seed=1).samples(docs)]
    b = [x.input_ids for x in Sampler(CharTokenizer(), 32, seed=1).samples(docs)]
    c = [x.input_ids for x in Sampler(CharTokenizer(), 32, seed=2).samples(docs)]
    assert a == b and a != c and sorted(a) == sorted(c)
    slash = ord("/")
    with_t = list(Sampler(CharTokenizer(), 32, seed=1, target_ids={slash}, target_filter="with-target").samples(docs))
    without = list(
        Sampler(CharTokenizer(), 32, seed=1, target_ids={slash}, target_filter="without-target").samples(docs)
    )
    assert len(with_t) == 20 and all(slash in x.input_ids for x in with_t)
    assert len(without) == 40 and all(slash not in x.input_ids for x in without)
    assert len(list(Sampler(CharTokenizer(), 32, seed=1).samples(docs, max_samples=7))) == 7


def test_a_shared_token_cache_changes_no_sample_and_tokenizes_each_text_once(monkeypatch):
    """Samplers of one tokenizer sharing ``cache`` (a pool's three draws) give exactly the uncached samples, for
    every seed and filter, short texts batched, long ones in pieces and a text repeated; each distinct text or
    piece reaches the tokenizer once. Pieces of 4 KiB instead of 1 MiB: the same paths, 256 times less text."""
    import headlab.corpus.samples

    monkeypatch.setattr(headlab.corpus.samples, "PIECE_CHARS", 4096)
    PIECE_CHARS = headlab.corpus.samples.PIECE_CHARS

    class Counting(CharTokenizer):
        seen: list[str] = []

        def __call__(self, text, add_special_tokens=True, **kw):
            if isinstance(text, list):  # the samples' texts (the special-token probe is one string)
                self.seen.extend(text)
            return super().__call__(text, add_special_tokens, **kw)

    long = "x/y " * (PIECE_CHARS // 2)  # two pieces and more
    docs = [Document(f"d{i}", lambda i=i: [f"text {i} a/b" if i % 3 == 0 else f"text {i}", "same text", long])
            for i in range(12)]
    draws = [(1, "with-target"), (1, "without-target"), (5, "any")]

    def sample(seed, filt, cache):
        return [x.input_ids for x in Sampler(Counting(), 32, seed=seed, target_ids={ord("/")}, target_filter=filt,
                                             cache=cache).samples(docs)]

    plain = [sample(seed, filt, None) for seed, filt in draws]
    Counting.seen = []
    cache: dict[str, list[int]] = {}
    assert [sample(seed, filt, cache) for seed, filt in draws] == plain
    assert len(Counting.seen) == len(set(Counting.seen)) == len(cache)  # every text tokenized once
    assert any(len(t) <= PIECE_CHARS and t in long for t in Counting.seen)  # the long text went in pieces


def test_file_corpus_reads_text_jsonl_gz_and_skips_binary(tmp_path):
    (tmp_path / "a.txt").write_text("plain text a/b")
    (tmp_path / "b.md").write_text("")  # empty: no text
    (tmp_path / "c.jsonl").write_text(
        json.dumps({"text": "json one"}) + "\n" + "not json\n" + json.dumps({"text": "json two"}) + "\n"
    )
    with gzip.open(tmp_path / "d.rst.gz", "wt") as fh:
        fh.write("gzipped rst")
    (tmp_path / "e.txt").write_bytes(b"\x00\x01binary\xff")
    (tmp_path / "f.bin").write_bytes(b"ignored")
    with says():
        texts = [t for d in file_documents(str(tmp_path)) for t in d.load()]
    assert sorted(texts) == ["gzipped rst", "json one", "json two", "plain text a/b"]


def test_corpus_errors(tmp_path):
    with pytest.raises(HeadlabError, match="neither a named source"):
        documents([str(tmp_path / "missing")])
    with pytest.raises(HeadlabError, match="empty"):
        documents([str(tmp_path)])  # a folder with nothing readable
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    with pytest.raises(HeadlabError, match="not .txt"):
        documents([str(tmp_path / "x.pdf")])


def test_pydoc_source_reads_stdlib_docstrings_without_importing():
    docs = documents(["pydoc"])
    assert len(docs) > 300
    texts = [t for d in docs[:40] for t in d.load()]
    assert texts and all(len(t.split()) >= 5 for t in texts)


def test_pysrc_reads_stdlib_source_files_whole():
    docs = documents(["pysrc"])
    assert len(docs) > 300 and docs[0].doc_id.startswith("pysrc:")
    text = next(t for d in docs[:40] for t in d.load())
    assert "def " in text or "import " in text


def test_translated_man_pages_render_in_their_language():
    import os

    if not os.path.isdir("/usr/share/man/ja/man1"):
        pytest.skip("manpages-ja is not installed (make test installs it where apt is available)")
    text = next(t for d in documents(["man-ja"])[:5] for t in d.load())
    assert sum(ord(c) > 0x3000 for c in text) > 20  # kana/kanji, not mojibake


@pytest.mark.parametrize(
    "name,path",
    [
        ("foldoc", "/usr/share/dictd/foldoc.dict.dz"),
        ("linux-doc", "/usr/share/doc/linux-doc-6.1"),
        ("python-doc", "/usr/share/doc/python3.11/html/_sources"),
        ("python-html", "/usr/share/doc/python3.11/html"),
        ("man-de", "/usr/share/man/de/man1"),
        ("man-zh", "/usr/share/man/zh_CN/man1"),
    ],
)
def test_debian_sources_say_how_to_install_when_missing(name, path):
    import os

    if os.path.exists(path):
        docs = documents([name])
        assert docs and any(t.strip() for d in docs[:20] for t in d.load())
    else:
        with pytest.raises(HeadlabError, match="apt-get install"):
            documents([name])


def test_what_is_skipped_is_said_whatever_the_warnings_filters(tmp_path, capsys) -> None:
    """A record without text is told on stderr and recorded even under PYTHONWARNINGS=ignore."""
    import warnings

    from headlab.corpus.files import file_documents

    f = tmp_path / "c.jsonl"
    f.write_text('{"text": "fine"}\n{"id": 2}\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with says(r"1 record\(s\) without a string 'text' field skipped") as said:
            assert [t for d in file_documents(str(f)) for t in d.load()] == ["fine"]
    assert said and "without a string 'text' field" in capsys.readouterr().err


def test_a_scan_records_what_it_skipped(tmp_path) -> None:
    from headlab import scan
    from headlab.nn import ModelConfig, Transformer, as_loaded, train_bpe

    f = tmp_path / "c.jsonl"
    f.write_text('{"text": "a b c d e f g h"}\n{"id": 2}\n')
    tok = train_bpe(["a b c d e f g h"] * 8, 300)
    lm = as_loaded(Transformer(ModelConfig(vocab_size=len(tok), n_layers=1, n_heads=2, d_model=16)), tok, "tiny")
    r = scan(lm, corpus=[str(f)], detectors=["previous-token"], max_samples=None, progress=False)
    assert any("without a string 'text' field" in w for w in r.warnings) and r.to_json()["warnings"] == r.warnings


def test_one_bad_byte_costs_no_file_and_deep_json_is_one_skipped_line(tmp_path) -> None:
    from headlab.corpus.files import file_documents

    (tmp_path / "a.txt").write_bytes(b"good text \xff and more")
    with says(r"a.txt: 1 byte sequence\(s\) that are not UTF-8 replaced"):
        assert [t for d in file_documents(str(tmp_path / "a.txt")) for t in d.load()] == ["good text \ufffd and more"]
    (tmp_path / "b.jsonl").write_text('{"text": "ok"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with says(r"b.jsonl:2: not JSON, line skipped"):
        assert [t for d in file_documents(str(tmp_path / "b.jsonl")) for t in d.load()] == ["ok"]


def test_records_are_named_by_their_id_or_line_and_a_non_string_text_is_skipped(tmp_path) -> None:
    """The record rules the monitor and the scan share: PATH#ID by the id field; a record without it is
    PATH:LINE (and said); a record whose text is not a string is skipped (and said), the others keep their lines."""
    from headlab.corpus.files import file_documents

    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "text": "one"}\n{"text": "two"}\n{"id": "c", "text": ["no"]}\n{"id": 4, "text": "d"}\n')
    with says(r"without a string 'text' field skipped"):
        docs = list(file_documents(str(f)))
    assert [d.doc_id for d in docs] == [f"{f}#a", f"{f}:2", f"{f}#4"]
    assert [t for d in docs for t in d.load()] == ["one", "two", "d"]


def test_every_named_corpus_names_each_document_once():
    """A document's id is what a scan's rows, a monitor's rows and a dataset's written-back records are keyed by;
    two documents under one id would be merged (the standard library repeats file names: 45 __init__.py)."""
    from headlab.corpus.sources import NAMED_SOURCES

    checked = 0
    for name, source in NAMED_SOURCES.items():
        try:
            ids = [d.doc_id for d in source()]
        except HeadlabError:  # a corpus whose Debian package is not installed here
            continue
        assert len(ids) == len(set(ids)), f"{name} repeats document ids"
        checked += 1
    assert checked >= 3


NESTED = '''"""Module docstring of five words."""
if True:
    def f():
        """Function under an if, five words."""
try:
    class C:
        """Class under a try, five words here."""
        async def g(self):
            """Async method of a class, five words."""
except ImportError:
    def h():
        """Function in an except handler, five."""
match 1:
    case 1:
        def k():
            """Function in a match case, five."""
x = [lambda: None for _ in ()]
'''


def test_the_statement_walk_finds_ast_walks_docstrings_in_its_order(tmp_path):
    """pydoc skips expressions when it looks for docstrings; against ast.walk on every node, on nested
    statements of every kind and on a spread of real standard-library modules."""
    import ast

    from headlab.corpus.sources import _docstrings, _stdlib_files

    def naive(path):
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        docs = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, kinds)]
        return [d for d in docs if d and len(d.split()) >= 5]

    nested = tmp_path / "nested.py"
    nested.write_text(NESTED)
    assert len(_docstrings(nested)) == 6 and _docstrings(nested) == naive(nested)
    files = _stdlib_files()
    for _, path in files[:: max(1, len(files) // 40)]:
        assert _docstrings(path) == naive(path), path


def test_a_text_longer_than_any_scan_reads_is_cut_at_a_character_and_said(tmp_path, monkeypatch):
    from headlab.corpus import document

    monkeypatch.setattr(document, "MAX_TEXT_BYTES", 100)
    (tmp_path / "long.txt").write_text("é" * 80, encoding="utf-8")  # 160 bytes; byte 100 is inside no character
    (tmp_path / "short.txt").write_text("é" * 40, encoding="utf-8")
    with says(r"long\.txt: cut after its first"):
        texts = {d.doc_id.rsplit("/", 1)[-1]: d.load() for d in file_documents(str(tmp_path))}
    assert texts["long.txt"] == ["é" * 50] and texts["short.txt"] == ["é" * 40]


@pytest.mark.parametrize("zipped", [False, True])
def test_a_record_longer_than_any_scan_reads_is_skipped_unread_and_said(tmp_path, monkeypatch, zipped):
    from headlab.corpus import document

    monkeypatch.setattr(document, "MAX_TEXT_BYTES", 200)
    lines = [json.dumps({"id": "a", "text": "x" * 50}), json.dumps({"id": "b", "text": "y" * 500}),
             json.dumps({"id": "c", "text": "z" * 50})]
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / ("r.jsonl.gz" if zipped else "r.jsonl")
    path.write_bytes(gzip.compress(data) if zipped else data)
    with says(r"1 record\(s\) longer than .* skipped \(line 2\)"):
        docs = list(file_documents(str(path)))
    assert [d.doc_id.split("#")[1] for d in docs] == ["a", "c"] and docs[1].load() == ["z" * 50]


def test_a_zipped_jsonl_keeps_a_bounded_amount_of_text_and_says_where_it_stopped(tmp_path, monkeypatch):
    from headlab.corpus import document

    monkeypatch.setattr(document, "MAX_ZIPPED_TEXTS", 300)
    lines = [json.dumps({"id": str(i), "text": "w" * 100}) for i in range(10)]
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with says(r"only the records up to line 3 are read"):
        docs = list(file_documents(str(path)))
    assert len(docs) == 3


READ_UNDER_A_LIMIT = """
import resource, sys
from headlab.corpus.files import file_documents
def vm():
    return int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm() + int(sys.argv[2]) * 2**20, resource.RLIM_INFINITY))
n = sum(len(t) for d in file_documents(sys.argv[1]) for t in d.load())
print(n)
"""


@pytest.mark.parametrize("name", ["one.txt", "one.txt.gz", "one.jsonl"])
def test_a_corpus_of_one_huge_text_is_read_in_bounded_memory(tmp_path, name):
    """Under an address-space limit of 400 MB above the interpreter's (ulimit -v), a 600 MB text file, its .gz,
    and a JSONL of one 600 MB record are read: the first 64 MiB of the text, the record skipped."""
    import subprocess
    import sys

    path = tmp_path / name
    chunk = b"slash / heads " * (2**20 // 14)
    body = chunk * 600
    if name.endswith(".jsonl"):
        path.write_bytes(b'{"id": "big", "text": "' + body + b'"}\n{"id": "small", "text": "a b c"}\n')
    elif name.endswith(".gz"):
        with gzip.open(path, "wb", compresslevel=1) as fh:
            for _ in range(600):
                fh.write(chunk)
    else:
        path.write_bytes(body)
    del body
    got = subprocess.run([sys.executable, "-c", READ_UNDER_A_LIMIT, str(path), "400"], capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    expected = 5 if name.endswith(".jsonl") else 64 * 2**20
    assert int(got.stdout.split()[-1]) == expected, got.stderr[-500:]
