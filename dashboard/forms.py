"""Dashboard forms: input shapes only; the rules live in the services they feed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import forms

from core.errors import Conflict, DomainError, InvalidContent
from core.kinds import MemoryKind
from dashboard import values
from dashboard.templatetags.memgov_words import STATUS_WORDS, status_word
from memory.erasure import MAX_REASON
from memory.models import Scenario, Status
from memory.resolver import (
    CRITERIA,
    KIND_RANK,
    UNREVIEWED_KIND,
    VERIFICATION_RANK,
    PolicyError,
    check_publishable,
)
from memory.resolver import Policy as ResolverPolicy
from memory.rules import DIMENSION_RE

TIME_HELP = "In the tenant's time zone (see Policy). Leave empty for now."
# A quoted name opens after a space or a bracket and closes before one: the apostrophe
# of "the field catalog's schema" is not a quote.
QUOTED = re.compile(r"(?<!\w)'([^']*)'(?!\w)")


def in_sentences(problem: str) -> str:
    """A service's refusal as a sentence beside a field: "no entity 'ent_9' in this
    tenant" reads "No entity “ent_9” in this tenant."."""
    text = QUOTED.sub(r"“\1”", problem.strip())
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else f"{text}."


# A service refusing an action on a version whose state moved on ends "; this is <status>."
STATE_NOW = re.compile(r"; this is (\w+)\.?$")


def moved_on(exc: DomainError) -> str | None:
    """The state, in words, of a version that moved on before the action reached it (a
    lost race: "…; this is pending_review"), or None for any other refusal."""
    found = STATE_NOW.search(exc.detail)
    if isinstance(exc, Conflict) and found and found.group(1) in STATUS_WORDS:
        return status_word(found.group(1))
    return None


def refusal_words(exc: DomainError) -> str:
    """A service's refusal as a person reads it: a lost race says what happened and the
    state now in words ("Only a held_unresolved memory can be linked; this is
    pending_review" → "Nothing was done: it changed after this page was loaded …")."""
    now = moved_on(exc)
    if now is not None:
        return (
            f"Nothing was done: it changed after this page was loaded and is now “{now}”. "
            "The page shows it as it is."
        )
    return in_sentences(exc.detail)


def add_errors(form: forms.Form, exc: InvalidContent) -> None:
    """Put a service's 422 beside the fields it names (the rest above the form), so the
    person sees it where they typed and keeps what they typed."""
    for name, problems in exc.errors.items():
        for problem in problems:
            form.add_error(name if name in form.fields else None, in_sentences(problem))


def parse_context(text: str) -> dict[str, str]:
    """``project=P-9, supplier=S-17`` (commas or new lines) → a scope or context mapping."""
    result: dict[str, str] = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        dim, sep, value = part.partition("=")
        dim, value = dim.strip(), value.strip()
        if not sep or not value:
            raise forms.ValidationError(f"“{part.strip()}” is not dimension=value")
        if not DIMENSION_RE.match(dim):
            raise forms.ValidationError(
                f"“{dim}” is not a dimension (lower case letters, digits, _; 32 at most)"
            )
        if dim in result:
            raise forms.ValidationError(f"“{dim}” is given twice")
        result[dim] = value
    return result


class ContextField(forms.CharField):
    """A scope or context typed as ``dim=value, dim=value``."""

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        return parse_context(super().to_python(value) or "")


class UtcDateTimeField(forms.DateTimeField):
    """Read in the tenant's time zone, which the dashboard activates for the request."""

    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"})


class DashboardForm(forms.Form):
    """Several forms share a page: each gets its own id prefix so labels stay unique."""

    id_prefix = "id"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"{self.id_prefix}_%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class ApproveForm(DashboardForm):
    id_prefix = "approve"
    comment = forms.CharField(
        required=False,
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: what you checked.",
    )


class RejectForm(DashboardForm):
    id_prefix = "reject"
    reason = forms.CharField(
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Required: the proposer and owner read it.",
    )


class RetireForm(DashboardForm):
    id_prefix = "retire"
    reason = forms.CharField(max_length=4000, widget=forms.Textarea(attrs={"rows": 2}))
    in_flight = forms.ChoiceField(
        label="Tasks that already used it",
        choices=[
            ("reverify", "Flag them: they must re-verify before acting"),
            ("continue", "Leave them alone"),
        ],
        initial="reverify",
        # Radios, not a select: each choice is a sentence that must be read whole, and a
        # select in the narrow decision column cut it off (issue 15).
        widget=forms.RadioSelect,
    )


class RevokeSourceForm(DashboardForm):
    id_prefix = "revoke"
    reason = forms.CharField(
        max_length=2000, help_text="Every memory based on this source is retired."
    )


class ScenarioForm(DashboardForm):
    id_prefix = "scenario"
    kind = forms.ChoiceField(choices=Scenario.Kind.choices)
    context = ContextField(
        required=False, max_length=2000, help_text="dimension=value, separated by commas"
    )
    valid_at = UtcDateTimeField(required=False, help_text=TIME_HELP)
    expect = forms.ChoiceField(choices=Scenario.Expect.choices)


LINK_CONFIRM_REQUIRED = "Tick the box to confirm what linking does."


class CorrectionForm(DashboardForm):
    """What the owner changes after failed checks; everything else is copied from the
    failed version (``memory_correct``), and the new version goes to review again.

    The value is typed as the field catalog's ``value_schema`` says (``dashboard.values``:
    a string field is a text box); ``head_version`` is the version the page showed, sent
    as If-Match, so a correction of a version that changed meanwhile is refused."""

    id_prefix = "correct"
    value_schema: Mapping[str, Any] | None = None
    value = values.JsonValueField()
    head_version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    statement = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One sentence a person can check against the evidence.",
    )
    scope = ContextField(
        required=False, max_length=2000, help_text="dimension=value, separated by commas"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["value"] = values.value_field(self.value_schema)

    @classmethod
    def for_schema(cls, schema: Mapping[str, Any] | None) -> type[CorrectionForm]:
        """This form with the value field a schema calls for (a class: the view builds
        it from the POST as it builds every other form)."""
        return type("CorrectionForm", (cls,), {"value_schema": schema})

    def correction(self) -> dict[str, Any]:
        return {
            "value": self.cleaned_data["value"],
            "statement": self.cleaned_data["statement"],
            "scope": self.cleaned_data["scope"],
        }


class LinkSubjectForm(forms.Form):
    subject = forms.CharField(max_length=40, label="Entity")
    # Linking a preference can activate it without review: the page says so, and the
    # reviewer confirms having read it (the label is drawn by the template, per kind).
    confirm = forms.BooleanField(error_messages={"required": LINK_CONFIRM_REQUIRED})


class NewSubjectForm(DashboardForm):
    """The entity a held mention is about, created in place with its aliases."""

    id_prefix = "new_subject"
    name = forms.CharField(max_length=200, help_text="The full name, e.g. Dana Customer.")
    kind = forms.CharField(max_length=50, initial="customer", help_text="customer, person, …")
    aliases = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Other names, separated by commas; the mention is a good first one.",
    )
    confirm = forms.BooleanField(error_messages={"required": LINK_CONFIRM_REQUIRED})
    # Offered once the name turned out to be taken (the page shows it beside the error).
    another = forms.BooleanField(required=False, label="Create another entity with this name")

    def clean_aliases(self) -> list[str]:
        raw: str = self.cleaned_data.get("aliases") or ""
        aliases = [a.strip() for a in raw.split(",") if a.strip()]
        if any(len(a) > 200 for a in aliases):
            raise forms.ValidationError("An alias is at most 200 characters.")
        return aliases


class BrowseForm(forms.Form):
    """The memory browser's filters (GET)."""

    q = forms.CharField(required=False, max_length=200, label="Statement contains")
    subject = forms.CharField(required=False, max_length=40)
    kind = forms.ChoiceField(required=False, choices=[("", "any"), *MemoryKind.choices])
    status = forms.ChoiceField(
        required=False, choices=[("", "any"), *((s, STATUS_WORDS[s]) for s in Status.values)]
    )
    scope = ContextField(required=False, max_length=500, help_text="e.g. project=P-9")
    owner = forms.CharField(required=False, max_length=150)


class TimeTravelForm(forms.Form):
    """What resolve would answer for a subject, a context and the two times."""

    tt_subject = forms.CharField(max_length=40, label="Subject")
    tt_context = ContextField(
        required=False, max_length=2000, label="Context", help_text="e.g. task=order-a"
    )
    tt_valid_at = UtcDateTimeField(
        required=False, label="Valid at (world time)", help_text=TIME_HELP
    )
    tt_known_at = UtcDateTimeField(
        required=False, label="Known at (system time)", help_text=TIME_HELP
    )


class AuditFilterForm(forms.Form):
    target = forms.CharField(required=False, max_length=60)
    actor = forms.CharField(required=False, max_length=150)
    action = forms.CharField(required=False, max_length=60)
    since = UtcDateTimeField(required=False, help_text="In the tenant's time zone (see Policy).")


POLICY_LISTS = {  # field: (what one entry is, the names it takes, whether all must be ranked)
    "order": ("criterion", CRITERIA, False),
    "kind_rank": ("kind", KIND_RANK, True),
    "verification_rank": ("verification", VERIFICATION_RANK, True),
}


def _names_problem(noun: str, names: list[str], allowed: tuple[str, ...], complete: bool) -> str:
    """What is wrong with one typed list, in words (the resolver's own refusal reads like
    the API's: "precedence.kind_rank: unknown 'task_fct'; allowed: …")."""
    unknown = [name for name in names if name not in allowed]
    if unknown:
        listed = ", ".join(f"“{name}”" for name in unknown)
        verb = "is not a" if len(unknown) == 1 else "are not"
        plural = "" if len(unknown) == 1 else "s"
        return (
            f"{listed} {verb} {noun}{plural} Memgov knows. Check the spelling; the names "
            f"are {', '.join(allowed)}."
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return f"{', '.join(f'“{n}”' for n in repeated)} is listed more than once."
    missing = [name for name in allowed if name not in names] if complete else []
    if missing:
        return f"Every {noun} must be ranked: add {', '.join(missing)}."
    return "" if names else f"Name at least one {noun}."


class PolicyForm(DashboardForm):
    """The precedence as three ordered lists, strongest first. A typo is refused here,
    in words beside the list that has it, before any service is asked."""

    id_prefix = "policy"
    order = forms.CharField(
        max_length=500, help_text="Criteria in the order they decide, comma separated."
    )
    kind_rank = forms.CharField(max_length=500, help_text="Kinds, strongest first.")
    verification_rank = forms.CharField(max_length=500, help_text="Strongest first.")
    reason = forms.CharField(max_length=2000, help_text="Why the policy changes (audited).")

    def precedence(self) -> dict[str, list[str]]:
        return {
            name: [part.strip() for part in self.cleaned_data[name].split(",") if part.strip()]
            for name in ("order", "kind_rank", "verification_rank")
        }

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if any(name not in self.cleaned_data for name in POLICY_LISTS):
            return cleaned  # a list is missing: its own error says so
        precedence = self.precedence()
        for name, (noun, allowed, complete) in POLICY_LISTS.items():
            problem = _names_problem(noun, precedence[name], allowed, complete)
            if problem:
                self.add_error(name, problem)
        if any(name in self.errors for name in POLICY_LISTS):
            return cleaned
        if precedence["kind_rank"][-1] != UNREVIEWED_KIND:
            self.add_error(
                "kind_rank",
                f"{UNREVIEWED_KIND} must come last: an unreviewed memory never outranks a "
                "reviewed one.",
            )
            return cleaned
        try:  # whatever else the resolver refuses, beside the list it names
            check_publishable(ResolverPolicy.from_precedence("new", precedence))
        except PolicyError as exc:
            field = exc.key if exc.key in POLICY_LISTS else None
            self.add_error(field, in_sentences(str(exc).removeprefix(f"precedence.{exc.key}: ")))
        return cleaned


class RevalidateForm(DashboardForm):
    id_prefix = "revalidate"
    reason = forms.CharField(
        max_length=2000, help_text="e.g. the model, the prompt or the tools changed."
    )


class EraseForm(forms.Form):
    """Erasing cannot be undone: the person types the subject's id, and says why."""

    confirm = forms.CharField(label="Type the subject's id to confirm", max_length=40)
    reason = forms.CharField(
        label="Reason (kept with the erasure; no personal details)",
        max_length=MAX_REASON,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
