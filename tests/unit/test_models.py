import json

import pytest

from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.models import NAMED_MODELS, load


def test_models_list_shows_every_named_model(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for name in NAMED_MODELS:
        assert name in out
    assert "installed" in out.splitlines()[0]


def test_broken_model_directory_is_one_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(HeadlabError, match="cannot load model"):
        load(str(tmp_path))


def test_directory_without_config(tmp_path):
    with pytest.raises(HeadlabError, match="no config.json"):
        load(str(tmp_path))


def test_unknown_model_install_is_an_error():
    with pytest.raises(HeadlabError, match="unknown model"):
        from headlab.models import install

        install("nope")


def _tiny_llama_dir(path):
    """A tiny GQA Llama saved in ``path``, with minilm-l6's tokenizer files."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok_src = NAMED_MODELS["minilm-l6"]
    if not tok_src.installed():
        pytest.skip("needs minilm-l6's tokenizer files")
    import shutil

    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(tok_src.locate() / f, path / f)
    return path


def test_tiny_saved_model_loads_from_a_directory(tmp_path):
    """Any HF model directory loads, with its facts (a tiny GQA Llama saved here, tokenizer from minilm)."""
    lm = load(str(_tiny_llama_dir(tmp_path)))
    f = lm.facts
    assert (f.n_layers, f.n_heads, f.n_kv_heads, f.causal, f.position_encoding) == (2, 4, 2, True, "rope")
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "llama"


def test_device_errors_are_clear():
    from headlab.models.loader import _device

    with pytest.raises(HeadlabError, match="unknown device"):
        _device("tpu-ish")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(HeadlabError, match="no CUDA"):
            _device("cuda")
    assert str(_device("auto")) in ("cpu", "cuda")


def test_a_decoder_loads_once_for_the_loss_metrics(tmp_path, monkeypatch):
    """The config says a model is a causal LM before its weights are read, so the metrics load it once, with
    its head; an encoder's config says it is not, and where no config can be read the answer is None."""
    import headlab.ablation.metrics as metrics
    import headlab.models.loader as loader
    from headlab.models.loader import declares_causal_lm

    folder = _tiny_llama_dir(tmp_path / "llama")
    assert declares_causal_lm(folder) is True and declares_causal_lm("minilm-l6") is False
    assert declares_causal_lm(tmp_path / "absent") is None
    calls = []
    real = loader.load

    def counted(*a, **k):
        calls.append(k.get("lm_head"))
        return real(*a, **k)

    monkeypatch.setattr(loader, "load", counted)
    monkeypatch.setattr(metrics, "load", counted)
    loaded = metrics.load_for_metric(str(folder), "cpu", "float32")
    assert calls == [True] and loaded.model.get_output_embeddings() is not None


def test_a_model_loads_without_transformers_own_progress_bar(tmp_path, capfd):
    """Loading prints nothing: Transformers' "Loading weights" bar ignores --no-progress, so it is kept off
    while headlab loads, and put back after."""
    from transformers.utils import logging as hf_logging

    path = _tiny_llama_dir(tmp_path)
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()  # as a fresh process has it (HF_HUB_DISABLE_PROGRESS_BARS unset)
    try:
        capfd.readouterr()
        load(str(path))
        assert "Loading weights" not in capfd.readouterr().err
        assert hf_logging.is_progress_bar_enabled()
    finally:
        (hf_logging.enable_progress_bar if was else hf_logging.disable_progress_bar)()


def test_a_missing_test_model_skips_here_and_fails_under_ci(monkeypatch):
    from tests import support

    monkeypatch.setattr(support, "NAMED_MODELS", {"minilm-l6": type("Absent", (), {"installed": lambda self: False})()})
    need = support.need
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        need("minilm-l6")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI every test model"):
        need("minilm-l6")


def test_a_folder_without_tokenizer_files_loads_with_the_tokenizer_it_is_given(tmp_path, capsys):
    """``tokenizer=`` (``--tokenizer``) reads the tokenizer from another source, here a named model's, and the
    model's name records it; without it the folder is refused."""
    from transformers import BertConfig, BertModel

    if not NAMED_MODELS["minilm-l6"].installed():
        pytest.skip("needs minilm-l6's tokenizer files")
    folder = tmp_path / "weights-only"
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2)).save_pretrained(folder)
    with pytest.raises(HeadlabError, match="lacks its tokenizer files"):
        load(str(folder))
    lm = load(str(folder), tokenizer="minilm-l6")
    assert lm.name == f"{folder} (tokenizer: minilm-l6)"
    assert lm.tokenizer("hello world")["input_ids"] == load("minilm-l6").tokenizer("hello world")["input_ids"]
    texts = tmp_path / "t.txt"
    texts.write_text("A sentence about nothing in particular. " * 40)
    assert main(["scan", str(folder), "--tokenizer", "minilm-l6", "--corpus", str(texts), "--max-samples", "2",
                 "--out", str(tmp_path / "scan"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "scan" / "scan.json").read_text())["model"] == lm.name
    capsys.readouterr()
    assert main(["scan", str(folder), "--corpus", str(texts), "--out", str(tmp_path / "refused")]) == 2
    assert "lacks its tokenizer files" in capsys.readouterr().err


def test_a_tokenizer_whose_vocabulary_is_not_the_models_own_is_refused_unless_forced(tmp_path):
    """A folder with a tokenizer of its own given another vocabulary's (its own word pieces with other ids) is
    refused before its weights are read; its own tokenizer, given again, is not; forcing is recorded."""
    from transformers import BertConfig, BertModel

    if not NAMED_MODELS["minilm-l6"].installed():
        pytest.skip("needs minilm-l6's tokenizer files")
    folder = tmp_path / "own"
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2)).save_pretrained(folder)
    load("minilm-l6").tokenizer.save_pretrained(folder)
    assert load(str(folder), tokenizer="minilm-l6").name.endswith("(tokenizer: minilm-l6)")  # its own, given again
    other = tmp_path / "shuffled"  # minilm-l6's word pieces with their ids reversed: the same tokens, other ids
    BertConfig(vocab_size=30522).save_pretrained(other)
    load("minilm-l6").tokenizer.save_pretrained(other)
    spec = json.loads((other / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    spec["model"]["vocab"] = {w: len(vocab) - 1 - i for w, i in vocab.items()}
    (other / "tokenizer.json").write_text(json.dumps(spec))
    for extra in ("vocab.txt", "special_tokens_map.json"):
        (other / extra).unlink(missing_ok=True)
    with pytest.raises(HeadlabError, match=r"--tokenizer .*shuffled: \d+% of its .* tokens keep their ids"):
        load(str(folder), tokenizer=str(other))
    assert load(str(folder), tokenizer=str(other), force_tokenizer=True).name.endswith(", forced)")
