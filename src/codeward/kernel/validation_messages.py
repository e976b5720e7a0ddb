"""Pydantic validation errors as sentences a person, or a model, can act on.

One describer serves tool arguments (:mod:`codeward.kernel.catalog`) and configuration keys
(:mod:`codeward.config`), so both say the same things the same way: which field, what it
must be, what was given, and for an unknown name the closest known one. Callers only choose
the noun ("argument", "key") and where a field is ("[shell] max_timeout_s", "'path'").
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

ProblemKind = Literal["missing", "unknown", "invalid"]
Loc = tuple[str | int, ...]
_OWN_SENTENCE = frozenset({"value_error", "assertion_error"})
"""Error types whose message a validator wrote itself (a sentence naming the fix)."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one field, located by the path of names that leads to it."""

    loc: Loc
    kind: ProblemKind
    expected: str
    """What the field holds, in words ("an integer", "a list of strings", "one of 'a', 'b'")."""
    message: str
    given: Any = None
    known: tuple[str, ...] = ()
    """For an unknown name: the names accepted where it was found."""
    own_sentence: bool = False
    """``message`` is a validator's own sentence ("must be 'off', 'warn' or 'refuse'")."""
    error_type: str = ""
    """Pydantic's error type (``int_type``, ``greater_than``...)."""

    @property
    def name(self) -> str:
        return str(self.loc[-1]) if self.loc else ""

    @property
    def suggestion(self) -> str | None:
        """The known name closest to an unknown one, if any is close."""
        close = difflib.get_close_matches(self.name, self.known, n=1, cutoff=0.6)
        return close[0] if close else None

    def fix(self) -> str:
        """The sentence after the field's name: what it must be, or what to use instead."""
        if self.kind == "missing":
            return f"is required ({self.expected})"
        if self.kind == "unknown":
            suggestion = self.suggestion
            if suggestion is not None:
                return f"is not known; did you mean {suggestion!r}?"
            return f"is not known; known: {', '.join(self.known) or 'none'}"
        given = short_repr(self.given)
        got = "" if given in self.message or isinstance(self.given, Mapping) else f" (got {given})"
        if self.own_sentence:
            return f"{self.message}{got}"
        if self.error_type.endswith("_type"):  # the expected type says it all
            return f"must be {self.expected}{got}"
        return f"must be {self.expected}: {self.message}{got}"


def problems(exc: ValidationError, model: type[BaseModel],
             known_names: Callable[[type[BaseModel]], Iterable[str]] | None = None) -> list[Problem]:
    """Every error of ``exc`` (raised validating ``model``) as a :class:`Problem`, in order, once each.

    ``known_names(owner)`` lists the names an owner model accepts (for "did you mean"); by
    default its fields and their aliases.
    """
    names = known_names or _field_names
    found: list[Problem] = []
    seen: set[Loc] = set()
    for error in exc.errors():
        raw_loc: Loc = tuple(error["loc"])
        kind = error["type"]
        if kind == "extra_forbidden":
            loc, owner, _ = _walk(model, raw_loc[:-1])
            problem = Problem((*loc, raw_loc[-1]) if raw_loc else loc, "unknown", "", error["msg"],
                              error.get("input"), tuple(sorted(names(owner))) if owner else ())
        else:
            loc, _, annotation = _walk(model, raw_loc)
            own = kind in _OWN_SENTENCE
            message = _own_message(error) if own else error["msg"]
            problem = Problem(loc, "missing" if kind == "missing" else "invalid", annotation_name(annotation),
                              message, error.get("input"), own_sentence=own, error_type=kind)
        if problem.loc in seen:  # a union reports each member's failure; one line per field is enough
            continue
        seen.add(problem.loc)
        found.append(problem)
    return found


def short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def annotation_name(annotation: Any) -> str:
    """A type in words, as the person writing a value thinks of it."""
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin is Annotated:
        return annotation_name(get_args(annotation)[0])
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean (true/false)",
             Path: "a path string"}
    if annotation in names:
        return names[annotation]
    if origin in (Union, types.UnionType):
        if len(args) == 1:
            return annotation_name(args[0]) + " or null"
        return " or ".join(annotation_name(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(annotation))
    if origin in (list, tuple, set, frozenset):
        item = [a for a in args if a is not Ellipsis]
        return "a list" + (f" of {_plural(annotation_name(item[0]))}" if item else "")
    if origin in (dict, Mapping) or annotation is dict:
        return "a table" + (f" of {_plural(annotation_name(args[1]))}" if len(args) == 2 else "")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a table"
    if annotation is None or annotation is type(None):
        return "null"
    if annotation is Any:
        return "any value"
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _plural(name: str) -> str:
    bare = name.removeprefix("a ").removeprefix("an ")
    if bare.startswith("boolean"):
        return "booleans"
    if bare == "table":
        return "tables"
    return bare if bare.startswith(("one of", "list", "table", "any")) else bare + "s"


def _own_message(error: Mapping[str, Any]) -> str:
    cause = (error.get("ctx") or {}).get("error")
    text = str(cause) if cause is not None else str(error["msg"])
    return text.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _field_names(model: type[BaseModel]) -> Iterable[str]:
    for name, info in model.model_fields.items():
        yield info.alias or name


def _walk(model: type[BaseModel], raw_loc: Loc) -> tuple[Loc, type[BaseModel] | None, Any]:
    """The meaningful part of an error location, the last model on the way, and the annotation there.

    Pydantic puts union member tags (``'str'``, ``'function-after[...]'``) into locations; they
    are dropped, so a field is named the way it is written.
    """
    annotation: Any = model
    owner: type[BaseModel] | None = None
    kept: list[str | int] = []
    for part in raw_loc:
        annotation = _strip(annotation)
        submodel = _model_of(annotation)
        if submodel is not None:
            owner = submodel
            info = _field(submodel, part)
            if info is None:
                break
            kept.append(part)
            annotation = info.annotation
            continue
        origin = get_origin(annotation)
        args = get_args(annotation)
        if origin in (dict, Mapping) and len(args) == 2:
            kept.append(part)
            annotation = args[1]
        elif origin in (list, tuple, set, frozenset) and isinstance(part, int):
            kept.append(part)
            annotation = args[0] if args else Any
        elif origin in (Union, types.UnionType):
            member = next((a for a in args if _model_of(_strip(a)) is not None), None)
            if member is not None and _field(_model_of(_strip(member)), part) is not None:  # type: ignore[arg-type]
                annotation = member
                owner = _model_of(_strip(member))
                info = _field(owner, part)  # type: ignore[arg-type]
                kept.append(part)
                annotation = info.annotation if info else Any
            # else: a union member tag; stay on the union
        else:
            break
    final = _model_of(_strip(annotation))
    return tuple(kept), final or owner, annotation


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _field(model: type[BaseModel], part: str | int) -> Any:
    if not isinstance(part, str):
        return None
    info = model.model_fields.get(part)
    if info is not None:
        return info
    return next((i for i in model.model_fields.values() if i.alias == part), None)
