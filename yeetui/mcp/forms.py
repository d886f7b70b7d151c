"""What an MCP server asks the user through elicitation (`elicitation/create`): a form of a few typed fields, or
a page to open. The request is hostile input — a flat object of primitive fields is all the spec allows, and
all that is shown: every text is capped and made terminal-safe, and what the user types is checked against
the field's type and bounds before it is sent back.

A front end that can show a form (the TUI) answers through `FormDesk.answerer`; where none is set (headless
runs, workers, servers) the request is refused with the reason, which the server hears."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from yeetui.text import cap, terminal_safe

MAX_FIELDS = 20
TEXT_CAP = 500
OPTIONS_CAP = 50
Kind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class FormField:
    name: str
    title: str
    kind: Kind
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()
    """A choice's (value, title) pairs."""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None


@dataclass(frozen=True)
class FormRequest:
    server: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str | None = None
    """A URL-mode request: the page the server asks the user to open (no fields then)."""


@dataclass(frozen=True)
class FormAnswer:
    action: Action
    content: dict[str, Any] = field(default_factory=dict)


FormAnswerer = Callable[[FormRequest], Awaitable[FormAnswer]]


class FormDesk:
    """Who answers the forms of this process's MCP servers: a front end that shows them sets `answerer`."""

    def __init__(self) -> None:
        self.answerer: FormAnswerer | None = None


class FormRefused(ValueError):
    """The server's request is not a form yeetui can show (the reason is sent back to it)."""


def _text(value: Any, limit: int = TEXT_CAP) -> str:
    return terminal_safe(cap(value, limit)) if isinstance(value, str) else ""


def form_request(server: str, params: Any) -> FormRequest:
    """The SDK's `ElicitRequestParams` as a form to show. Raises FormRefused."""
    message = _text(getattr(params, "message", ""), 2000)
    if getattr(params, "mode", "form") == "url":
        url = getattr(params, "url", "")
        if not isinstance(url, str) or not url.startswith("https://"):
            raise FormRefused("a page to open must be an https:// address")
        return FormRequest(server, message, url=cap(url, 2000))
    given: Any = getattr(params, "requested_schema", None)
    schema: Any = given.model_dump(by_alias=True, exclude_none=True) if hasattr(given, "model_dump") else given
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise FormRefused("the requested schema must be an object of fields")
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping) or len(properties) > MAX_FIELDS:
        raise FormRefused(f"a form has at most {MAX_FIELDS} fields, as an object of properties")
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    return FormRequest(server, message, tuple(_field(str(name), spec, str(name) in required)
                                              for name, spec in properties.items()))


def _field(name: str, spec: Any, required: bool) -> FormField:
    if not isinstance(spec, Mapping):
        raise FormRefused(f"field {name!r} is not a schema")
    title = _text(spec.get("title")) or terminal_safe(cap(name, 80))
    common: dict[str, Any] = {"description": _text(spec.get("description")), "required": required}
    kind = spec.get("type")
    if kind == "array":
        items: Mapping[str, Any] = spec["items"] if isinstance(spec.get("items"), Mapping) else {}
        options = _options(items)
        if not options:
            raise FormRefused(f"field {name!r} lists no choices")
        default = spec.get("default")
        return FormField(name, title, "choices", options=options, min_length=_int(spec.get("minItems")),
                         max_length=_int(spec.get("maxItems")),
                         default=[d for d in default if isinstance(d, str)] if isinstance(default, list) else None,
                         **common)
    if kind == "string" and (options := _options(spec)):
        default = spec.get("default")
        return FormField(name, title, "choice", options=options, default=default if isinstance(default, str) else None,
                         **common)
    if kind == "string":
        default = spec.get("default")
        return FormField(name, title, "text", default=default if isinstance(default, str) else None,
                         min_length=_int(spec.get("minLength")), max_length=_int(spec.get("maxLength")),
                         format=spec.get("format") if isinstance(spec.get("format"), str) else None, **common)
    if kind in ("number", "integer"):
        default = spec.get("default")
        number = default if isinstance(default, int | float) and not isinstance(default, bool) else None
        return FormField(name, title, kind, default=number, minimum=_number(spec.get("minimum")),
                         maximum=_number(spec.get("maximum")), **common)
    if kind == "boolean":
        default = spec.get("default")
        return FormField(name, title, "boolean", default=default if isinstance(default, bool) else None, **common)
    raise FormRefused(f"field {name!r} has a type a form cannot ask for ({kind!r})")


def _options(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A choice's values: `enum` (titled by `enumNames` if given), or `oneOf`/`anyOf` of `{const, title}`."""
    if isinstance(spec.get("enum"), list):
        names: list[Any] = spec["enumNames"] if isinstance(spec.get("enumNames"), list) else []
        return tuple((str(v), _text(names[n]) if n < len(names) else _text(str(v)))
                     for n, v in enumerate(spec["enum"][:OPTIONS_CAP]) if isinstance(v, str))
    for key in ("oneOf", "anyOf"):
        if isinstance(spec.get(key), list):
            return tuple((str(o["const"]), _text(o.get("title")) or _text(str(o["const"])))
                         for o in spec[key][:OPTIONS_CAP] if isinstance(o, Mapping) and isinstance(o.get("const"), str))
    return ()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def checked(request: FormRequest, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """What the user filled in, as the schema's types (text typed into a number field becomes a number), and
    what is wrong with it, by field name (empty: it may be sent). An empty optional field is left out."""
    content: dict[str, Any] = {}
    wrong: dict[str, str] = {}
    for each in request.fields:
        value = given.get(each.name)
        if value in (None, "", []):
            if each.required:
                wrong[each.name] = "needed"
            continue
        try:
            content[each.name] = _value(each, value)
        except ValueError as exc:
            wrong[each.name] = str(exc)
    return content, wrong


def _value(each: FormField, value: Any) -> Any:
    if each.kind == "boolean":
        return bool(value)
    if each.kind in ("number", "integer"):
        try:
            number: float = int(str(value)) if each.kind == "integer" else float(str(value))
        except ValueError:
            raise ValueError("a whole number" if each.kind == "integer" else "a number") from None
        if each.minimum is not None and number < each.minimum:
            raise ValueError(f"at least {each.minimum:g}")
        if each.maximum is not None and number > each.maximum:
            raise ValueError(f"at most {each.maximum:g}")
        return number
    if each.kind in ("choice", "choices"):
        return _chosen(each, value)
    text = str(value)
    if each.min_length is not None and len(text) < each.min_length:
        raise ValueError(f"at least {each.min_length} characters")
    if each.max_length is not None and len(text) > each.max_length:
        raise ValueError(f"at most {each.max_length} characters")
    if each.format == "email" and not _EMAIL.fullmatch(text):
        raise ValueError("an email address")
    if each.format == "uri" and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", text):
        raise ValueError("an address (https://…)")
    if each.format == "date" and not _DATE.fullmatch(text):
        raise ValueError("a date (YYYY-MM-DD)")
    return text


def _chosen(each: FormField, value: Any) -> Any:
    values = [v for v, _ in each.options]
    if each.kind == "choice":
        if value not in values:
            raise ValueError("one of the choices")
        return value
    chosen = [v for v in value if v in values] if isinstance(value, list) else []
    if each.min_length is not None and len(chosen) < each.min_length:
        raise ValueError(f"at least {each.min_length}")
    if each.max_length is not None and len(chosen) > each.max_length:
        raise ValueError(f"at most {each.max_length}")
    return chosen
