"""Training configuration: a TOML file with ``[model]``, ``[data]``, ``[optim]``, ``[checkpoints]``, ``[track]``,
``[monitor]``, ``[induce]``.

Every key has a default (below); a config names only what it changes. Unknown keys are errors, so a typo
cannot silently fall back to a default. The resolved config (defaults filled in) is written to the run
folder as ``config.toml``.
"""

from __future__ import annotations

import tomllib
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.nn.transformer import ModelConfig
from headlab.values import machine_memory


@dataclass
class DataConfig:
    corpus: list[str] = field(default_factory=lambda: ["wiki", "pydoc"])  # headlab.corpus sources or paths
    tokenizer: str = "bpe:2048"     # bpe:N (trained on the corpus), a named model, or a tokenizer path
    tokenizer_chars: int = 3_000_000  # characters of corpus text the BPE is trained on
    window: int = 64                # tokens per training window, special tokens included
    n_windows: int = 20000          # size of the window pool (epochs cycle through it)
    slash_share: float | None = 0.25  # share of windows containing '/'; None = as the corpus has it
    probe_windows: int = 32         # held-out slash windows for the gradient signals and the tracker
    repeat_share: float = 0.0       # share of windows whose second half repeats their first (copying lever)
    mask_prob: float = 0.15         # encoders: share of tokens masked for the masked-LM loss


@dataclass
class OptimConfig:
    steps: int = 2000
    batch_size: int = 32            # global batch (split across processes under torchrun)
    lr: float = 3e-3
    min_lr_ratio: float = 0.1       # cosine decay ends at lr * min_lr_ratio
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    seed: int = 0
    log_every: int = 10
    threads: int = 0                # torch threads; 0 = torch's default


@dataclass
class CheckpointConfig:
    early_points: int = 12          # log-spaced checkpoints over the first early_fraction of training
    early_fraction: float = 0.1
    every: int = 200                # then one every `every` steps (and always at the last step)


@dataclass
class TrackConfig:
    grad_every: int = 50            # gradient signals every N steps (0 = off)


@dataclass
class MonitorConfig:
    every: int = 0                  # head-monitor rows (monitor.jsonl) every N steps; 0 = off
    sink: float = 0.9               # all-sink warning: every head's first-token mass above this
    entropy_low: float = 0.05       # entropy-collapse warning: every head's normalized entropy below this
    entropy_high: float = 0.95      # entropy-uniform warning: every head's normalized entropy above this
    specialized: float = 0.5        # a head is specialized once a tracked score reaches this
    drop: float = 0.5               # lost-head warning: a specialized head's score below this share of its peak


@dataclass
class InduceConfig:
    heads: list[str] = field(default_factory=list)  # heads "L.H" the auxiliary `/` loss trains (train/induce.py)
    weight: float = 0.0             # its weight λ; 0 = off
    start: int = 0                  # first optimizer step (0-based) with the term
    stop: int = 0                   # first step without it; 0 = to the end of training


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    checkpoints: CheckpointConfig = field(default_factory=CheckpointConfig)
    track: TrackConfig = field(default_factory=TrackConfig)
    monitor: MonitorConfig = field(default_factory=MonitorConfig)
    induce: InduceConfig = field(default_factory=InduceConfig)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SECTIONS = {"model": ModelConfig, "data": DataConfig, "optim": OptimConfig, "checkpoints": CheckpointConfig,
             "track": TrackConfig, "monitor": MonitorConfig, "induce": InduceConfig}


def from_dict(raw: dict[str, Any], where: str = "config") -> TrainConfig:
    unknown = set(raw) - set(_SECTIONS)
    if unknown:
        raise HeadlabError(f"{where}: unknown section(s) {sorted(unknown)}; known: {sorted(_SECTIONS)}")
    parts = {}
    for name, cls in _SECTIONS.items():
        section = dict(raw.get(name, {}))
        known = {f.name for f in fields(cls)}
        bad = set(section) - known
        if bad:
            raise HeadlabError(f"{where}: unknown key(s) {sorted(bad)} in [{name}]; known: {sorted(known)}")
        if section.get("slash_share") == "natural":
            section["slash_share"] = None
        hints = typing.get_type_hints(cls)
        for key, value in section.items():
            section[key] = _typed(value, hints[key], f"{where}: [{name}] {key}")
        try:
            parts[name] = cls(**section)
        except (TypeError, ValueError) as exc:
            raise HeadlabError(f"{where}: [{name}] {exc}") from None
    cfg = TrainConfig(**parts)
    _check(cfg, where)
    return cfg


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _typed(value: Any, hint: Any, what: str) -> Any:
    """``value`` checked against the field's annotation (TOML has types; a wrong one is named, not crashed on)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _typed(value, next(a for a in args if a is not type(None)), what)
    if origin is typing.Literal:
        if value not in args:
            raise HeadlabError(f"{what} must be one of {', '.join(map(repr, args))}, not {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise HeadlabError(f"{what} must be a list, not {value!r}")
        return [_typed(v, args[0], what) for v in value] if args else value
    if hint in _TYPE_NAMES:
        ok = isinstance(value, hint) and not (hint is not bool and isinstance(value, bool))
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            raise HeadlabError(f"{what} must be {_TYPE_NAMES[hint]}, not {value!r} ({type(value).__name__})")
    return value


#: each numeric setting's range: (least, most, whether the most is excluded); None: unbounded. steps, lr, the
#: shares and the monitor's thresholds are checked in _check
RANGES: dict[str, tuple[float, float | None, bool]] = {
    "optim.warmup_steps": (0, None, False), "optim.min_lr_ratio": (0, 1, False), "optim.weight_decay": (0, None, False),
    "optim.beta1": (0, 1, True), "optim.beta2": (0, 1, True), "optim.grad_clip": (0, None, False),
    "optim.log_every": (1, None, False), "optim.threads": (0, None, False), "data.window": (2, None, False),
    "data.n_windows": (0, None, False), "data.probe_windows": (0, None, False), "data.mask_prob": (0, 1, True),
    "data.tokenizer_chars": (1, None, False), "checkpoints.early_points": (0, None, False),
    "checkpoints.early_fraction": (0, 1, False), "checkpoints.every": (1, None, False),
    "track.grad_every": (0, None, False),
}


def _check_ranges(cfg: TrainConfig, where: str) -> None:
    for key, (lo, hi, open_hi) in RANGES.items():
        section, name = key.split(".")
        value = getattr(getattr(cfg, section), name)
        if value < lo or (hi is not None and (value >= hi if open_hi else value > hi)):
            span = (f"at least {lo}" if hi is None else f"at least {lo} and below {hi}" if open_hi
                    else f"between {lo} and {hi}")
            raise HeadlabError(f"{where}: {key} must be {span}, not {value}")


#: checkpoints one run may plan: each is a file of the whole model, and the plan is a list held in memory
MAX_CHECKPOINTS = 100_000


def check_sizes(cfg: TrainConfig, where: str, flags: dict[str, str] | None = None) -> None:
    """Refuse a run that cannot fit, before the corpus is read: its parameters with their gradients and two
    Adam moments (4 float32 copies), one step's activations and the training pool of token windows against the
    machine's memory, and its checkpoint plan. ``flags``: how the caller spells a setting (``--batch-size``)
    where it is not a config file's key."""
    m, o, spelled = cfg.model, cfg.optim, flags or {}

    def name(key: str) -> str:  # a config file's key, unless the caller spells it otherwise
        return spelled.get(key, key)

    per_layer = (4 + 2 * m.mlp_ratio) * m.d_model ** 2
    params = m.vocab_size * m.d_model * (1 if m.tie_embeddings else 2) + m.n_layers * per_layer
    T = cfg.data.window
    # kept for the backward, per token: each block's projections and MLP (about (8 + 2·mlp_ratio)·d floats) and
    # two rows of attention probabilities per head; the logits and their gradient
    act = 4 * o.batch_size * T * (m.n_layers * ((8 + 2 * m.mlp_ratio) * m.d_model + 2 * m.n_heads * T)
                                  + 2 * m.vocab_size)
    pool = 8 * cfg.data.n_windows * T  # the drawn windows' token ids
    have = machine_memory()
    parts = [(16 * params, f"a model of about {params:,} parameters (weights, gradients, optimizer state)",
              f"{name('model.d_model')}, {name('model.n_layers')} or {name('model.vocab_size')}"),
             (act, f"a step of {o.batch_size:,} windows of {T} tokens (activations)",
              f"{name('optim.batch_size')} or {name('data.window')}"),
             (pool, f"a pool of {cfg.data.n_windows:,} windows of {T} tokens", name("data.n_windows"))]
    total = sum(b for b, _, _ in parts)
    if have and total > have:
        need, what, smaller = max(parts)
        raise HeadlabError(f"{where}: {what} needs about {need / 2**30:,.0f} GiB "
                           f"({total / 2**30:,.0f} GiB in all), more than this machine's "
                           f"{have / 2**30:.0f} GiB; make {smaller} smaller")
    planned = o.steps // max(1, cfg.checkpoints.every)
    if planned > MAX_CHECKPOINTS:
        every = name("checkpoints.every")
        raise HeadlabError(f"{where}: {name('optim.steps')} {o.steps:,} with {every} "
                           f"{cfg.checkpoints.every} plans {planned:,} checkpoints, more than {MAX_CHECKPOINTS:,}; "
                           f"raise {every} or lower the steps")


def _check(cfg: TrainConfig, where: str) -> None:
    o, d = cfg.optim, cfg.data
    _check_ranges(cfg, where)
    check_sizes(cfg, where)
    if o.steps < 1 or o.batch_size < 1:
        raise HeadlabError(f"{where}: steps and batch_size must be at least 1")
    if not o.lr > 0:
        raise HeadlabError(f"{where}: optim.lr must be positive, not {o.lr}")
    if d.window > cfg.model.max_length:
        raise HeadlabError(f"{where}: data.window {d.window} exceeds model.max_length {cfg.model.max_length}")
    if d.slash_share is not None and not 0 <= d.slash_share <= 1:
        raise HeadlabError(f"{where}: data.slash_share must be in [0, 1] or \"natural\"")
    if not 0 <= d.repeat_share <= 1:
        raise HeadlabError(f"{where}: data.repeat_share must be in [0, 1], not {d.repeat_share}")
    _check_induce(cfg.induce, where, cfg.model.n_layers, cfg.model.n_heads)
    m = cfg.monitor
    if m.every < 0:
        raise HeadlabError(f"{where}: monitor.every must be 0 (off) or a positive number of steps, not {m.every}")
    for key in ("sink", "entropy_low", "entropy_high", "specialized", "drop"):
        if not 0 < getattr(m, key) < 1:
            raise HeadlabError(f"{where}: monitor.{key} must lie strictly between 0 and 1, not {getattr(m, key)}")


def _check_induce(i: InduceConfig, where: str, cfg_layers: int, cfg_heads: int) -> None:
    for h in i.heads:
        try:
            Head.parse(h).check(cfg_layers, cfg_heads)
        except HeadlabError as exc:
            raise HeadlabError(f"{where}: [induce] heads: {exc}") from None
    if i.weight < 0 or i.start < 0 or i.stop < 0:
        raise HeadlabError(f"{where}: [induce] weight, start and stop must not be negative")
    if i.stop and i.stop <= i.start:
        raise HeadlabError(f"{where}: [induce] stop {i.stop} must come after start {i.start} (or be 0: to the end)")
    if i.weight > 0 and not i.heads:
        raise HeadlabError(f"{where}: [induce] weight {i.weight} names no heads; add heads = [\"L.H\", ...]")


def same_but_vocab(a: TrainConfig, b: TrainConfig) -> bool:
    """Whether two configs describe the same run (the vocabulary ids are filled in from the tokenizer)."""
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        for k in ("vocab_size", "pad_id", "mask_id"):
            d["model"].pop(k)
    return da == db


#: the training configs that ship with headlab (``configs/`` in a checkout is this folder)
CONFIGS_DIR = Path(__file__).parent / "configs"


def named_configs() -> dict[str, Path]:
    """Every packaged config by name: its path under :data:`CONFIGS_DIR` without ``.toml`` (``smoke``,
    ``scale/xs``)."""
    return {p.relative_to(CONFIGS_DIR).with_suffix("").as_posix(): p for p in sorted(CONFIGS_DIR.rglob("*.toml"))}


def config_path(spec: str | Path) -> Path:
    """A config file as given, else the packaged config of that name (``smoke``); one line when neither."""
    p = Path(spec)
    if p.exists():
        return p
    named = named_configs()
    key = str(spec).removesuffix(".toml").removeprefix("configs/")
    if key in named:
        return named[key]
    raise HeadlabError(f"config file {p} does not exist, and {str(spec)!r} is not a named config "
                       f"({', '.join(named)})")


def load_config(path: str | Path) -> TrainConfig:
    """A training config: a TOML file, or a named config that ships with headlab (:func:`named_configs`)."""
    p = config_path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HeadlabError(f"config file {p} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HeadlabError(f"{p} is not valid TOML: {exc}") from None
    return from_dict(raw, str(p))


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def to_toml(cfg: TrainConfig) -> str:
    """The resolved config as TOML (``None`` is written as the string ``"natural"`` for slash_share)."""
    lines = []
    for name, section in cfg.to_dict().items():
        lines.append(f"[{name}]")
        for k, v in section.items():
            if v is None and k == "slash_share":
                v = "natural"
            lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
    return "\n".join(lines)
