"""Markdown to safe HTML: Markdown renders (raw HTML in the source passes through it), then nh3
keeps only an allow-list of tags and attributes, so `<script>`, event handlers (`onerror=`),
`style` and `javascript:` URLs never reach a page."""

from __future__ import annotations

import markdown as md
import nh3

TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
    "h2": {"id"},
    "h3": {"id"},
    "h4": {"id"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}


def render(source: str) -> str:
    """HTML safe to insert into a page, whatever the source contains."""
    html = md.markdown(
        source or "",
        extensions=["fenced_code", "tables", "sane_lists", "toc"],
        output_format="html",
    )
    return nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer",
    )
