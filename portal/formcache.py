"""Render a form's fields once per distinct content: the allocation page's launch and sweep forms
rendered widget by widget were a third of its time (docs/performance.md).

An unbound form's field HTML (each field through `includes/field.html`) is a pure function of the
form class, its prefix and id format, the active language, and for every field: its label, help
text, required and disabled flags, the widget class and attributes (those the field adds too,
such as min and max), the initial value as the form would render it, and the choices. `fingerprint`
collects exactly those; a render is kept per process under that key (LRU, small), so two
allocations whose projects register different datasets get different HTML, and a form whose
`__init__` changes a field changes its key. Bound forms (values and errors typed by the user)
are always rendered afresh, and so is everything in DEBUG, where templates change under the
running server. The CSRF token stays outside (it is per request).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django import forms
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe

FIELD_TEMPLATE = "includes/field.html"
MAX_ENTRIES = 256
_cache: OrderedDict[tuple, SafeString] = OrderedDict()
_lock = threading.Lock()


def _plain(value: Any) -> Any:
    """A hashable, address-free stand-in for an initial value or a choices list."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items()))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return (type(value).__name__, str(value))


def fingerprint(form: forms.BaseForm) -> tuple:
    fields = []
    for name, field in form.fields.items():
        widget = field.widget
        fields.append((
            name, str(field.label), str(field.help_text), field.required, field.disabled,
            field.show_hidden_initial, type(field).__name__, type(widget).__name__, _plain(widget.attrs),
            _plain(field.widget_attrs(widget)), getattr(widget, "input_type", None),
            _plain(form.get_initial_for_field(field, name)),
            _plain(list(field.choices)) if hasattr(field, "choices") else None,
        ))
    return (type(form).__module__, type(form).__qualname__, form.prefix, str(form.auto_id),
            form.use_required_attribute, translation.get_language(), tuple(fields))


def _render(form: forms.BaseForm) -> SafeString:
    html = "".join(render_to_string(FIELD_TEMPLATE, {"field": bf}) for bf in form)
    return mark_safe(html)  # nosec B308 B703 # the joined output of autoescaped templates


def render_fields(form: forms.BaseForm) -> SafeString:
    """The form's fields as HTML, from the cache when the form is unbound and was seen before."""
    if form.is_bound or settings.DEBUG:
        return _render(form)
    key = fingerprint(form)
    with _lock:
        html = _cache.get(key)
        if html is not None:
            _cache.move_to_end(key)
            return html
    html = _render(form)
    with _lock:
        _cache[key] = html
        while len(_cache) > MAX_ENTRIES:
            _cache.popitem(last=False)
    return html


def clear() -> None:
    with _lock:
        _cache.clear()
