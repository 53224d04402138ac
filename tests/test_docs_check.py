"""The documentation covers the package: every public name has an API entry, and every
page is reachable from the front page. Fast: imports sciad and reads Markdown, compiles
nothing."""

import importlib
import inspect
from pathlib import Path
import re

import sciad  # noqa: F401  (the submodules below are imported through it)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODULES = ("sciad", "sciad.ode", "sciad.md", "sciad.rigid", "sciad.fit")

_FENCE = re.compile(r"^ *(```|~~~).*?^ *\1", re.S | re.M)
# Inline links [text](target "title") and reference definitions [label]: target.
_LINK = re.compile(
    r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?$",
    re.M,
)


def _public_names(name):
    """`(dotted name, object)` for the public names of module `name`: its `__all__`, else
    its attributes that are neither private nor modules."""
    module = importlib.import_module(name)  # `sciad.fit` the module, not the function
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n in dir(module)
            if not n.startswith("_") and not inspect.ismodule(getattr(module, n))
        ]
    return [(f"{name}.{n}", getattr(module, n)) for n in names]


def _resolve(dotted):
    """The object a `::: dotted.name` directive documents (`None` if it names nothing).
    Attributes first, as Python resolves `sciad.fit` (the function); a module shadowed by
    an attribute of its name is used for the names it holds (`sciad.fit.FitResult`)."""
    parts = dotted.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, attr in enumerate(parts[1:], start=1):
        if not hasattr(obj, attr):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                return None
        if not hasattr(obj, attr):
            return None
        obj = getattr(obj, attr)
    return obj


def _directives():
    """`{dotted name: page}` for every `::: dotted.name` in docs/api/*.md."""
    found = {}
    for page in sorted((DOCS / "api").glob("*.md")):
        for dotted in re.findall(r"^:::\s+([\w.]+)\s*$", page.read_text(), re.M):
            found.setdefault(dotted, page.relative_to(ROOT).as_posix())
    return found


def undocumented(public, directives):
    """The public names with no API entry. A name is covered by a directive of its own
    dotted name, or by one that documents the same object under the same short name in
    another namespace (a re-export: `sciad.fit.FitResult` as `sciad.FitResult`). An alias
    under another name (`sciad.Leapfrog = sciad.VelocityVerlet`) needs its own entry."""
    documented = {
        (id(obj), d.rsplit(".", 1)[-1])
        for d, obj in ((d, _resolve(d)) for d in directives)
        if obj is not None
    }
    return [
        n
        for n, obj in public
        if n not in directives and (id(obj), n.rsplit(".", 1)[-1]) not in documented
    ]


def test_every_public_name_has_an_api_entry():
    public = [pair for name in MODULES for pair in _public_names(name)]
    assert len(public) > 100  # the modules were found and read
    missing = undocumented(public, _directives())
    assert not missing, (
        "public names without a `::: <dotted name>` directive in docs/api/*.md: "
        + ", ".join(missing)
    )


def test_every_api_directive_names_an_object():
    broken = [f"{d} ({page})" for d, page in _directives().items() if _resolve(d) is None]
    assert not broken, "`:::` directives that name nothing: " + ", ".join(broken)


def links(page):
    """The pages under docs/ that `page` links to with relative Markdown links (outside
    code blocks; external links and pure anchors ignored)."""
    text = _FENCE.sub("", page.read_text())
    out = set()
    for inline, reference in _LINK.findall(text):
        target = (inline or reference).split("#")[0]
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        path = (page.parent / target).resolve()
        if path.suffix == ".md" and path.is_file() and path.is_relative_to(DOCS):
            out.add(path)
    return out


def unreachable(start, pages):
    """The pages of `pages` not reachable from `start` by following `links`."""
    seen, todo = {start}, [start]
    while todo:
        for nxt in links(todo.pop()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return sorted(p.relative_to(ROOT).as_posix() for p in set(pages) - seen)


def test_every_page_is_reachable_from_the_index():
    pages = [p.resolve() for p in [*DOCS.glob("*.md"), *DOCS.glob("api/*.md")]]
    assert len(pages) > 10
    missing = unreachable((DOCS / "index.md").resolve(), pages)
    assert not missing, (
        "pages not reachable from docs/index.md by relative Markdown links: " + ", ".join(missing)
    )
