"""The server's signatures are Standard Webhooks signatures: the specification's published
test vector (standard-webhooks/standard-webhooks, libraries/python/tests), and the client
package's verifier accepts what the server sends, with either secret during a rotation."""

from __future__ import annotations

import base64
from datetime import timedelta
from itertools import pairwise

from memgov_client import verify_webhook
from webhooks import signing
from webhooks.delivery import retry_schedule

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TIMESTAMP = 1614265330
PAYLOAD = b'{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_server_signs_the_published_message_with_the_published_signature():
    assert signing.signature(SECRET, msg_id=MSG_ID, timestamp=TIMESTAMP, body=PAYLOAD) == SIGNATURE


def test_a_new_secret_is_whsec_and_24_random_bytes():
    first, second = signing.secret_new(), signing.secret_new()

    assert first.startswith("whsec_") and first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 24


def test_during_a_rotation_a_receiver_holding_either_secret_verifies_the_delivery():
    old, new = signing.secret_new(), signing.secret_new()
    headers = signing.signed_headers([new, old], msg_id=MSG_ID, timestamp=TIMESTAMP, body=PAYLOAD)

    for secret in (old, new):
        assert dict(verify_webhook(PAYLOAD, headers, secret, now=TIMESTAMP)) == {"test": 2432232314}
    assert headers["webhook-id"] == MSG_ID
    assert headers["webhook-timestamp"] == str(TIMESTAMP)
    assert len(headers["webhook-signature"].split(" ")) == 2


def test_the_real_retry_schedule_backs_off_exponentially_for_24_hours(settings):
    settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = 5
    settings.MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS = 24 * 3600

    schedule = retry_schedule()
    waits = [later - earlier for earlier, later in pairwise(schedule)]

    assert schedule[0] == timedelta(0)
    assert schedule[-1] == timedelta(hours=24)
    assert waits[:3] == [timedelta(seconds=5), timedelta(seconds=10), timedelta(seconds=20)]
    assert all(b == 2 * a for a, b in pairwise(waits[:-1]))
    assert waits[-1] < 2 * waits[-2]  # the last attempt is made when the window ends
    assert len(schedule) == 16  # 14 doubling waits (to 22.75 h), then the 24-hour mark
