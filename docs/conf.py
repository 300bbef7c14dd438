"""Sphinx configuration of the clperiod documentation (built with -W: warnings are errors)."""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)  # document this checkout's clperiod, installed or not

project = "clperiod"
author = "clperiod developers"
copyright = "clperiod developers, MIT licence"
try:
    release = metadata.version("clperiod")
except metadata.PackageNotFoundError:
    release = "0+unknown"

# numpydoc (rather than sphinx.ext.napoleon) renders the docstrings: it is the
# reference reader of their format, as in astropy, checks the section names,
# and builds without a warning under -W.
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]

myst_heading_anchors = 3

# Every cross-reference must resolve (a broken one fails the build). Other
# projects' objects are not linked: intersphinx would need the network.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|scipy|astropy|pandas|pyarrow|pyopencl|dask|distributed|matplotlib)\..*"),
]

autodoc_default_options = {"members": True, "member-order": "bysource"}
# the numpydoc sections give the types; annotations in signatures would repeat
# them as unlinkable references
autodoc_typehints = "none"
# no member tables on top of the members themselves
numpydoc_show_class_members = False

html_theme = "pydata_sphinx_theme"
html_title = f"clperiod {release}"
html_static_path = ["_static"]


#: A Markdown link target: a relative path, then an optional ``#anchor``.
_LINK = re.compile(r"\]\((?!\w+:)([^)#\s]+)(#[^)\s]*)?\)")


def _repository_markdown_as_downloads(app, docname, source):
    """Links to Markdown files outside docs/ (README files) become download links.

    The pages link them with plain relative paths, which work on GitHub; MyST
    would look for a document of that name instead of the file.
    """
    folder = os.path.dirname(os.path.join(app.srcdir, docname))
    srcdir = os.path.realpath(app.srcdir)

    def replace(match):
        target = match.group(1)
        path = os.path.realpath(os.path.join(folder, target))
        if target.endswith(".md") and os.path.commonpath([path, srcdir]) != srcdir:
            return f"](path:{target})"
        return match.group(0)

    source[0] = _LINK.sub(replace, source[0])


def setup(app):
    app.connect("source-read", _repository_markdown_as_downloads)
