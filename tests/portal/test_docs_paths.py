"""Every repo path the README and docs/ name exists (issue 35: docs in the present tense).

A path is what a reader would open: a word in a code span or a fenced block, a bare word in the
prose that ends in a file extension (docs/ledger.md), or a Markdown link's target. A word counts
when it holds a `/` and ends in a known extension, or when it starts with one of the repo's
top-level folders (`launcher/slurm/`). `<name>` placeholders and `*` are globs that must match
something; `{a,b}` expands as in the shell. Code spans, fenced blocks and prose are read from
the repo root, links from the doc's own folder (as GitHub renders them).

Not repo paths, so left out: URLs; absolute and home paths; `$VARIABLE/...`; folders the house
generates (`GENERATED`); API routes, which the docs write with `{id}` or a `?query`
(`allocations/{id}/usage/`); and runtime paths rooted outside the repo, which the docs write
with a placeholder and whose first folder is none of the repo's (`tasks/<token>/out/`, an S3
key; `<run_dir>/record.json`, a file on a compute node).

Plain files only: no database, no services, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTENSIONS = "py|md|sh|toml|ini|yml|yaml|json|html|txt|cfg|lua|js|css|png|svg|csv|j2"
# Made by `make install`, `make run`, `make bench` or collectstatic; never in a clone.
GENERATED = ("var/", ".venv/", ".hub/", ".vendor/", "staticfiles/", "bench/out/")

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
BARE = re.compile(
    r"(?<![\w./:$~-])((?:\.{1,2}/)?[\w.*<>-]+(?:/[\w.*<>{},-]+)+\.(?:" + EXTENSIONS + r"))\b"
)
HAS_EXTENSION = re.compile(r"\.(?:" + EXTENSIONS + r")$")
API_ROUTE = re.compile(r"\?|\{[^{},]*\}")  # `requests/?project=`, `allocations/{id}/`
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
EDGE = "`'\"()[],;:!?"


def top_folders(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and p.name != ".git"}


def expand_braces(word: str) -> list[str]:
    """`launcher/{local,slurm}/` -> both paths, as the shell expands them."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not match:
        return [word]
    head, tail = word[: match.start()], word[match.end() :]
    return [w for part in match.group(1).split(",") for w in expand_braces(head + part + tail)]


def clean(word: str) -> str:
    """The path in a word: no surrounding punctuation, no `::test` or `:line` after it."""
    word = word.strip(EDGE).rstrip(".")
    word = re.sub(r"::.*$", "", word)
    word = re.sub(r":\d+(?:-\d+)?$", "", word)
    return word.strip(EDGE)


def looks_like_path(word: str, tops: set[str]) -> bool:
    if "/" not in word or "://" in word or "@" in word or "$" in word:
        return False
    if word.startswith(("/", "~")) or API_ROUTE.search(word):
        return False
    bare = word.removeprefix("./")
    if bare.split("/", 1)[0] in tops:
        return True
    if "<" in word:
        return False  # rooted outside the repo: an S3 key, a file on a node, a dataset's layout
    return bool(HAS_EXTENSION.search(bare))


def generated(path: str) -> bool:
    """Made by `make install`/`make services`/a run, so absent from a fresh clone."""
    bare = path.removeprefix("./")
    return bare.startswith(GENERATED) or "node_modules" in bare.split("/")


def exists(path: str, base: Path) -> bool:
    """Whether `path` names something under `base`; a placeholder or `*` must match something."""
    pattern = re.sub(r"<[^<>/]*>", "*", path).replace("...", "*").replace("…", "*")
    if "*" in pattern:
        return any(base.glob(pattern.rstrip("/")))
    return (base / path).exists()


def words(text: str) -> list[str]:
    """Whitespace-separated words, a `<node token>` placeholder kept whole."""
    return re.sub(r"<[^<>\n]*>", lambda m: m.group().replace(" ", "_"), text).split()


def doc_words(text: str) -> Iterator[tuple[str, bool]]:
    """(word, is_link) for every candidate in a Markdown text."""
    prose: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif in_fence:
            yield from ((w, False) for w in words(line))
        else:
            prose.append(line)
    rest = "\n".join(prose)
    for match in LINK.finditer(rest):
        yield match.group(1), True
    rest = LINK.sub(" ", rest)
    for match in CODE_SPAN.finditer(rest):
        yield from ((w, False) for w in words(match.group(2)))
    rest = URL.sub(" ", CODE_SPAN.sub(" ", rest))
    for match in BARE.finditer(rest):
        yield match.group(1), False


def link_missing(target: str, doc: Path, root: Path) -> bool:
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target or target.startswith("/") or SCHEME.match(target):
        return False
    resolved = (doc.parent / target).resolve()
    if resolved.is_relative_to(root) and generated(str(resolved.relative_to(root))):
        return False
    return not exists(target, doc.parent)


def missing_paths(doc: Path, root: Path = REPO) -> list[str]:
    """The paths `doc` names that do not exist under `root`."""
    tops = top_folders(root)
    missing: set[str] = set()
    for raw, is_link in doc_words(doc.read_text(encoding="utf-8")):
        if is_link:
            if link_missing(raw, doc, root):
                missing.add(raw)
            continue
        for word in map(clean, expand_braces(clean(raw))):
            if looks_like_path(word, tops) and not generated(word) and not exists(word, root):
                missing.add(word)
    return sorted(missing)


def docs(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def test_every_path_a_doc_names_exists() -> None:
    lines = [f"{doc.relative_to(REPO)}: {path}" for doc in docs() for path in missing_paths(doc)]
    assert not lines, "paths named in the docs that do not exist:\n" + "\n".join(lines)


def test_the_checker_catches_a_planted_missing_path(tmp_path: Path) -> None:
    (tmp_path / "launcher").mkdir()
    (tmp_path / "launcher" / "tasks.py").write_text("")
    doc = tmp_path / "guide.md"
    doc.write_text(
        "The task is `launcher/tasks.py`; the ledger was `launcher/ledger.py` and, in prose,\n"
        "docs/gone.md. See [the old page](docs/old.md), https://example.org/a/b.py,\n"
        "`/etc/hosts`, `var/run.json`, `$OUT/x.json`, `launcher/{id}/` and `launcher/<name>.py`.\n"
        "```sh\npython launcher/{tasks,runners}.py\n```\n"
    )
    assert missing_paths(doc, root=tmp_path) == [
        "docs/gone.md",
        "docs/old.md",
        "launcher/ledger.py",
        "launcher/runners.py",
    ]
