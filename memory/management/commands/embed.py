from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memory import semantic, vectors


class Command(BaseCommand):
    help = (
        "Semantic retrieval's vectors: how many versions and entities have one of the "
        "configured model (--status), or embed every one that has none, here and now, "
        "showing progress (the worker's sweeper does the same a chunk a minute)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", action="store_true", help="only say how far it is")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["status"]:
            vectors.ensure_store(connection)
        progress = semantic.progress()
        if progress.model is None:
            raise CommandError(
                "semantic retrieval is off here: no model or no vector store "
                "(docs/operations.md, Semantic retrieval)"
            )
        self._say(progress)
        if options["status"]:
            return
        while True:
            written = semantic.embed_missing()
            if written:
                self._say(semantic.progress())
            if written < semantic.CHUNK:
                break

    def _say(self, progress: semantic.Progress) -> None:
        share = progress.embedded / progress.total if progress.total else 1.0
        self.stdout.write(
            f"{progress.model}: {progress.embedded} of {progress.total} versions and entities "
            f"embedded ({share:.0%})"
        )
