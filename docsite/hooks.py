"""mkdocs hooks of the documentation site (``make docs``).

The README stays the one source of the guide (GitHub shows it; a test checks its families table): the site
splits it into pages by its ``##`` sections, rewrites its links for their new place, and adds the pages, the
benchmarks and the result figures the pages show. Nothing under ``docs/`` is rewritten on disk.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]

#: guide page -> (title, README sections in order); every README section goes to exactly one page
GUIDE = {
    "getting-started": ("Getting started", ["Quick start", "Notebooks, the Python API and the documentation site",
                                            "Models", "Corpora", "Layout"]),
    "census": ("The census and its scores", ["What a scan does", "How capture works"]),
    "claims": ("The claims, measured", ["The claims, measured", "Stimuli"]),
    "ablation": ("Ablation", ["Ablation"]),
    "formation": ("Formation", ["Training small models and watching heads form", "Growing a head on purpose"]),
    "retrieval": ("The retrieval problem", ["The retrieval problem"]),
    "viewer": ("The viewer and reports", ["Seeing it: the offline viewer and reports"]),
    "languages": ("Across languages", ["Across languages"]),
    "monitor": ("The head monitor", ["Watching heads: the monitor"]),
    "architectures": ("Supported architectures", ["Architectures"]),
    "exit-codes": ("Exit codes, interrupts and result folders", ["Exit codes, interrupts and result folders"]),
}


def readme_sections() -> dict[str, str]:
    """README's ``##`` sections by title (a section keeps its ``###`` subsections)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


def _relink(text: str, up: str) -> str:
    """Links of a root file (written from the repository root) as seen from a site page ``up`` levels below
    the site root (``up``: "" or "../"): ``docs/X`` is the site's ``X``, BENCHMARKS.md its benchmarks page."""
    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        if target.startswith("docs/"):
            target = target[len("docs/"):]
        elif target == "BENCHMARKS.md":
            target = "benchmarks.md"
        return f"{m.group(1)}({up}{target})"

    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", fix, text)


def guide_pages() -> dict[str, str]:
    sections = readme_sections()
    placed = {s for _, names in GUIDE.values() for s in names}
    missing = sorted(set(sections) - placed)
    if missing:
        raise ValueError(f"README sections not placed in the site's guide (docsite/hooks.py GUIDE): {missing}")
    pages = {}
    for slug, (title, names) in GUIDE.items():
        body = [f"# {title}", ""]
        for name in names:
            if name != title or len(names) > 1:
                body.append(f"## {name}")
            body.append(_relink(sections[name], "../").strip("\n"))
            body.append("")
        pages[f"guide/{slug}.md"] = "\n".join(body)
    return pages


def on_files(files: Files, config) -> Files:
    for uri, content in guide_pages().items():
        files.append(File.generated(config, uri, content=content))
    bench = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "benchmarks.md", content=_relink(bench, "")))
    for png in sorted((ROOT / "results").rglob("*.png")):
        files.append(File.generated(config, png.relative_to(ROOT).as_posix(), abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Pages under docs/ show result figures as ``../results/...`` (right on GitHub); on the site the figures
    live at ``results/...`` beside the pages."""
    return markdown.replace("](../results/", "](results/")
