"""An email backend for a local run: one ``.eml`` file per message in a folder (``make run``
writes to ``var/mail/``), which any mail client opens. Django's own file backend appends
every message of a connection to one ``.log`` file, which no mail client reads."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone


class EmlFileBackend(BaseEmailBackend):
    def __init__(self, file_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.directory = Path(file_path or settings.EMAIL_FILE_PATH)

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        for message in email_messages:
            name = f"{timezone.now():%Y%m%d-%H%M%S}-{uuid4().hex[:8]}.eml"
            partial = self.directory / f".{name}.tmp"
            partial.write_bytes(message.message().as_bytes())
            os.replace(partial, self.directory / name)  # a reader never sees half a message
        return len(email_messages)
