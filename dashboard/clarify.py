"""Answering a held proposal's value question from its page (issue 43, point 1), with the
one service the API and MCP use (``approvals.services.memory_clarify``): it decides again
who may answer and which options they may see. A refusal shows next to the options, with
the reviewer's choice kept."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from approvals import services
from core.authority import Authority
from core.errors import DomainError, InvalidContent, NotFound
from core.principals import Principal
from dashboard.access import dashboard_memory, dashboard_view, error_page
from dashboard.forms import refusal_words
from dashboard.item import render_item
from dashboard.questions import ClarifyForm, chosen_from
from memory.models import Clarification, MemoryVersion, Status


def _answered(version: MemoryVersion, origin: MemoryVersion | None) -> str:
    """What the answer did, with what was chosen in words (the stored reason) and the
    memory it came from, as far as the reviewer may see it."""
    if version.status == Status.HELD_UNRESOLVED:
        return "Value set. Its subject question is still open: link the subject below."
    then = (
        "Its scenario checks are running; if they pass it becomes active without review."
        if version.status == Status.CHECKING
        else "It now waits for review like any other proposal."
    )
    source = f", from “{origin.statement}”" if origin is not None else ""
    return f"Answered ({version.status_reason}{source}). {then}"


@require_POST
@dashboard_view
def clarify(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    """Answer the value question with one of the options the reviewer was shown; the
    service checks again who may answer and which options they may see."""
    item, _ = dashboard_memory(principal, Authority.load(principal), memory_id)
    form = ClarifyForm(request.POST)
    if not form.is_valid():
        return render_item(request, principal, memory_id, status=422, bound={"clarify_form": form})
    try:
        version = services.memory_clarify(
            principal=principal,
            item=item,
            choice=form.cleaned_data["choice"],
            member=Clarification.Member.VALUE,
        )
    except NotFound as exc:
        return error_page(request, exc)
    except InvalidContent as exc:
        for messages_ in exc.errors.values():
            for message in messages_:
                form.add_error("choice", _choice_error(message))
        return render_item(
            request, principal, memory_id, status=exc.status, bound={"clarify_form": form}
        )
    except DomainError as exc:
        messages.error(request, refusal_words(exc))
        return render_item(request, principal, memory_id, status=exc.status)
    messages.success(request, _answered(version, chosen_from(principal, version)))
    return redirect(reverse("dashboard:item", args=[memory_id]))


def _choice_error(message: str) -> str:
    """The service's refusal in a reviewer's words where it speaks of option ids."""
    if message.startswith("must be one of the options"):
        return "That option is no longer offered to you; choose one of those shown."
    return message[:1].upper() + message[1:]
