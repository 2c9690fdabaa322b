"""headlab.scan and the CLI on a real packaged model (minilm-l6, a few seconds)."""

import csv
import json

import numpy as np
import pytest

from headlab import scan
from headlab.cli import main
from headlab.errors import HeadlabError
from tests.support import need

from .conftest import PLAIN_TEXTS, SLASH_TEXTS, named

pytestmark = pytest.mark.integration


def test_scan_result_schema_and_sdh_rule():
    lm = named("minilm-l6")
    r = scan(lm, SLASH_TEXTS * 3, max_samples=None, progress=False)
    assert r.n_samples == 18 and r.n_samples_with_target == 18
    j = r.to_json()
    assert {"model", "n_layers", "n_heads", "n_samples", "n_tokens", "settings", "sdh_share", "heads"} <= set(j)
    assert len(j["heads"]) == 72
    h = j["heads"][0]
    assert {"token", "token_std", "token_frac_above", "offset", "offset_delta", "previous-token",
            "duplicate-token", "induction", "sink"} <= set(h["scores"])
    # the SDH flag is exactly "max run of samples above θ reaches k"
    for head in j["heads"]:
        assert head["sdh"] == (head["scores"]["token_max_run"] >= 3)
    assert r.sdh_share == pytest.approx(sum(x["sdh"] for x in j["heads"]) / 72)
    # a stricter θ can only remove heads
    strict = scan(lm, SLASH_TEXTS * 3, max_samples=None, threshold=0.9, progress=False)
    assert not (strict.sdh & ~r.sdh).any()


def test_no_slash_in_data_is_a_documented_fallback(capsys):
    """Ordinary text: the token scores are undefined, recorded in the result, and said once by its summary instead
    of a '/' row, an SDH line and a warning on every scan."""
    lm = named("minilm-l6")
    r = scan(lm, PLAIN_TEXTS, progress=False)
    assert "contains" not in capsys.readouterr().err
    assert r.sdh_share is None and not r.sdh.any() and any("no sample contains '/'" in w for w in r.warnings)
    assert np.isnan(r.means["token"]).all()
    assert not np.isnan(r.means["previous-token"]).any()
    table = r.table()
    assert "no sample contains '/': the token detector and the SDH rule had nothing" in table
    assert "  token " not in table and "SDH (" not in table and "with target" not in table
    assert "no sample contains '/'" in r.markdown() and "| token |" not in r.markdown()


def test_long_text_is_windowed_not_truncated():
    lm = named("minilm-l6")
    long_text = " ".join(SLASH_TEXTS * 20)
    n_tok = len(lm.tokenizer(long_text, add_special_tokens=False)["input_ids"])
    r = scan(lm, [long_text], max_length=64, max_samples=None, progress=False)
    assert r.n_samples == -(-n_tok // 62)  # ceil over 62-token bodies ([CLS] ... [SEP])
    assert r.n_tokens == n_tok + 2 * r.n_samples


def test_cli_scan_writes_json_and_csv(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": t}) for t in SLASH_TEXTS * 2))
    out = tmp_path / "out"
    rc = main(["scan", "minilm-l6", "--corpus", str(corpus), "--max-samples", "10", "--no-progress",
               "--detectors", "token", "offset", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "SDH (token '/' > 0.5 in 3 consecutive samples)" in printed and "offset" in printed
    j = json.loads((out / "scan.json").read_text())
    assert j["n_samples"] == 10 and j["settings"]["detectors"]["offset"]["max_offset"] == 8
    rows = list(csv.DictReader((out / "heads.csv").open()))
    assert len(rows) == 72 and {"layer", "head", "token", "offset", "offset_delta", "sdh"} <= set(rows[0])
    from headlab.census.result import ScanResult

    ScanResult.read(out / "scan.json").write(tmp_path / "again")  # the JSON round trip gives the same files
    assert json.loads((tmp_path / "again" / "scan.json").read_text()) == j
    assert (tmp_path / "again" / "heads.csv").read_text() == (out / "heads.csv").read_text()


@pytest.mark.parametrize("argv,message", [
    (["scan", "no-such-model-xyz"], "unknown model"),
    (["scan", "minilm-l6", "--corpus", "/nonexistent/corpus"], "neither a named source"),
    (["scan", "minilm-l6", "--max-length", "2"], "no room"),
    (["models", "install", "nope"], "unknown model"),
])
def test_cli_errors_are_one_line(argv, message, capsys):
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_binary_and_empty_corpus(tmp_path, capsys):
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01\x02")
    rc = main(["scan", "minilm-l6", "--corpus", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "empty" in err.splitlines()[-1]


def test_interrupted_scan_keeps_partial_statistics_and_cleans_up(tmp_path):
    from headlab.detectors.sink import SinkDetector

    class Interrupting(SinkDetector):
        """A sink detector whose user presses Ctrl-C during the third batch."""

        batches: list = []  # batches seen (a route may score several layers of a batch in one call)

        def score(self, batch):
            if batch.input_ids.shape[0] == 1:  # the probe a detector from outside the package is tried on first
                return super().score(batch)
            if not any(b is batch for b in Interrupting.batches):
                Interrupting.batches.append(batch)
            if len(Interrupting.batches) == 3:
                raise KeyboardInterrupt
            return super().score(batch)

    lm = named("minilm-l6")
    impl = lm.model.config._attn_implementation
    import headlab.census.engine as engine

    old = engine.CHUNK_BATCHES
    engine.CHUNK_BATCHES = 1  # one batch per chunk, so two chunks complete before the interrupt
    try:
        # one fixed route: auto's timing of its routes scores batches too, and they would count here
        r = scan(lm, SLASH_TEXTS * 4, detectors=["token", Interrupting()], batch_size=4, max_samples=None,
                 route="fused", progress=False)
    finally:
        engine.CHUNK_BATCHES = old
    assert r.interrupted and r.n_samples == 8
    assert "INTERRUPTED" in r.table()
    assert lm.model.config._attn_implementation == impl
    r.write(tmp_path)  # what the interrupted command left; its rerun says the result there is partial
    with pytest.raises(HeadlabError, match=r"already holds scan.json from an earlier run, a partial one \(interrupted "
                       r"by SIGINT after 8 samples\); pass overwrite=True"):
        scan(lm, SLASH_TEXTS, detectors=["token"], progress=False, out=tmp_path)


@pytest.mark.parametrize("name", ["minilm-l6", "mpnet-base", "smollm2-135m", "gemma3-270m"])
def test_a_long_text_tokenized_in_pieces_gives_the_whole_texts_windows(name, monkeypatch):
    """Parity of the piecewise route (texts over PIECE_CHARS) with tokenizing the whole text at once, on
    WordPiece, byte-level BPE and SentencePiece (gemma3), for prose, code, runs of spaces and newlines and text
    without any space."""
    import headlab.corpus.samples as samples
    from headlab.corpus import Document, Sampler

    lm = named(name)
    text = (" ".join(SLASH_TEXTS) + "\n\n    def f(a,  b):\n\treturn a/b  \n" + "x" * 300 + " ") * 40
    doc = [Document("d", lambda: [text])]
    whole = [s.input_ids for s in Sampler(lm.tokenizer, 64, seed=3).samples(doc)]
    monkeypatch.setattr(samples, "PIECE_CHARS", 500)
    calls = []
    original = Sampler._tokenize
    monkeypatch.setattr(Sampler, "_tokenize", lambda self, texts: calls.append(len(texts[0])) or original(self, texts))
    piecewise = [s.input_ids for s in Sampler(lm.tokenizer, 64, seed=3).samples(doc)]
    assert piecewise == whole and len(calls) > 40 and max(calls) <= 500
    calls.clear()
    long = [Document("long", lambda: [text * 50])]  # 1.1M characters
    assert len(list(Sampler(lm.tokenizer, 64, seed=3).samples(long, max_samples=2))) == 2
    assert sum(calls) < len(text) * 25  # the first windows (a shuffle buffer's worth) need half the text at most


@pytest.mark.parametrize("name, tol", [("minilm-l6", 5e-3), ("smollm2-135m", 3e-2)])
def test_a_bfloat16_scan_agrees_with_the_float32_scan(name, tol):
    """--dtype bfloat16 on the packaged models: every head's mean score within the stated tolerance of float32
    (measured: minilm-l6 at most 2.8e-3, smollm2-135m at most 1.5e-2, both on the sink; 30 layers of bf16
    rounding add up), and the dtype is recorded."""
    named(name)  # skip when not installed
    texts = SLASH_TEXTS + PLAIN_TEXTS
    full = scan(name, texts, max_samples=None, progress=False)
    half = scan(name, texts, max_samples=None, progress=False, dtype="bfloat16")
    assert half.settings["dtype"] == "bfloat16" and full.settings["dtype"] == "float32"
    for k in full.means:
        np.testing.assert_allclose(half.means[k], full.means[k], atol=tol, rtol=0, equal_nan=True, err_msg=k)


def test_a_window_above_the_models_limit_is_said_and_recorded():
    """--max-length beyond what the model's positions hold is cut to the limit, said on stderr and kept in the
    scan's notices, never silently."""
    from headlab.census.scanner import scan
    from headlab.notices import recorded

    need("minilm-l6")
    with recorded() as said:
        r = scan("minilm-l6", texts=["a / b c d e f g h " * 300], max_samples=1, max_length=1024, progress=False)
    assert r.settings["window"] == 512
    assert any("--max-length 1024 is above" in m for m in said)


def test_repeat_stimuli_find_the_induction_head_that_ordinary_text_hides():
    """TransformerLens's recipe (random tokens repeated twice) through the census: on smollm2-135m head 18.6 tops
    induction (TransformerLens's formula gives it 0.46; on the default corpus it is fourth at 0.03)."""
    from headlab.corpus import repeat_probe

    lm = named("smollm2-135m")
    r = scan(lm, stimuli="repeat", max_samples=8, max_length=64, detectors=["induction"], progress=False)
    (head, score, _), *_ = r.top("induction", 1)
    assert head == "18.6" and score > 0.3, (head, score)
    assert r.settings["corpus"] == "stimuli: repeat" and r.n_samples == 8
    ids = repeat_probe(lm.tokenizer, 1, 64, 0)[0].input_ids  # [bos] + r + r
    half = (len(ids) - 1) // 2
    assert ids[1:1 + half] == ids[1 + half:]
    with pytest.raises(Exception, match="replaces the corpus"):
        scan(lm, stimuli="repeat", corpus=["wiki"], max_samples=4, progress=False)
