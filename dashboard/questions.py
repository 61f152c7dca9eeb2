"""Open questions of held proposals, as a reviewer reads them (issue 43, point 1): which
entity a mention means, or which value a referent ("there") stands for, with the options
the reader may see now (``clarifications.readable_options``). Answered in
``dashboard.clarify``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django import forms

from core.principals import Principal
from memory import clarifications
from memory.models import Clarification, MemoryVersion, Status


def value_words(value: Any) -> str:
    """A value as a reviewer reads it: text in quotes, anything else as JSON."""
    return f"“{value}”" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class ValueChoice:
    """One value option as this reader may see it, with the memory it was copied from."""

    id: str
    value: str
    label: str
    origin: MemoryVersion | None


@dataclass(frozen=True)
class OpenQuestion:
    member: str
    mention: str
    words: str
    choices: tuple[ValueChoice, ...] = ()

    @property
    def about_value(self) -> bool:
        return self.member == Clarification.Member.VALUE

    @property
    def needs(self) -> str:
        return "Needs a value" if self.about_value else "Needs a subject"


def open_questions(reader: Principal, version: MemoryVersion) -> list[OpenQuestion]:
    """The version's unanswered questions (subject first), each value question with the
    options ``reader`` may see; none unless it is held."""
    if version.status != Status.HELD_UNRESOLVED:
        return []
    found = []
    for question in clarifications.open_questions(version):
        choices: tuple[ValueChoice, ...] = ()
        if question.member == Clarification.Member.VALUE:
            choices = tuple(
                ValueChoice(
                    id=str(option.body["id"]),
                    value=value_words(option.body["value"]),
                    label=str(option.body.get("label") or ""),
                    origin=option.origin,
                )
                for option in clarifications.readable_options(reader, question.options)
            )
        words = clarifications.in_words(question, version.field)
        found.append(OpenQuestion(question.member, question.mention, words, choices))
    return found


class ClarifyForm(forms.Form):
    choice = forms.CharField(
        max_length=40, error_messages={"required": "Choose the value it means."}
    )


def chosen_from(reader: Principal, version: MemoryVersion) -> MemoryVersion | None:
    """The memory a just-clarified value was copied from, when ``reader`` may see it: the
    stored reason names the value only, and the page adds where it came from."""
    if not version.status_reason.startswith("value clarified:"):
        return None
    answered = (
        Clarification.objects.filter(
            version=version, member=Clarification.Member.VALUE, answered_at__isnull=False
        )
        .only("options", "choice")
        .first()
    )
    if answered is None:
        return None
    chosen = [o for o in answered.options if o.get("id") == answered.choice]
    shown = clarifications.readable_options(reader, chosen)
    return shown[0].origin if shown else None
