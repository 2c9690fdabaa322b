"""Run docs/tutorial.ipynb top to bottom in a fresh kernel of this interpreter and save its outputs in the file,
so the notebook shows them where it is read without running (GitHub, the docs). An output over 200 KB (the
inline viewer: the whole page) is replaced by a line saying what it was; progress bars (stderr streams and
widgets, whose state a saved notebook does not keep) are dropped.

    python bench/studies/tutorial_outputs.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "tutorial.ipynb"
LARGEST = 200_000


def _size(out: dict) -> int:
    return len(json.dumps(out))


def keep_outputs(nb: nbformat.NotebookNode) -> None:
    """What the saved notebook keeps of each code cell's outputs (see the module docstring)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if (out.get("output_type") == "stream" and out.get("name") == "stderr") or \
                    "application/vnd.jupyter.widget-view+json" in out.get("data", {}):
                continue
            if _size(out) > LARGEST:
                out = nbformat.v4.new_output("display_data", data={
                    "text/plain": f"(an output of {_size(out) / 1e6:.1f} MB, left out of the saved notebook: run the "
                                  "cell to see it)"})
            kept.append(out)
        cell["outputs"] = kept


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "kernels" / "headlab-tutorial"
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "headlab tutorial", "language": "python"}))
        os.environ["JUPYTER_PATH"] = tmp
        os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        work = Path(tmp) / "work"
        work.mkdir()
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nbclient.NotebookClient(nb, timeout=600, kernel_name=spec.name,
                                resources={"metadata": {"path": str(work)}}).execute()
    keep_outputs(nb)
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK} ({NOTEBOOK.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
