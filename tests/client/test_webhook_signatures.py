"""``verify_webhook`` against the Standard Webhooks test vectors, as published in the
specification's reference libraries (standard-webhooks/standard-webhooks,
``libraries/python/tests/test_webhooks.py`` and ``libraries/go/webhook_test.go``: the same
secret, message id, timestamp, payload and expected signature in both)."""

from __future__ import annotations

from typing import Any

import pytest

from memgov_client import WebhookVerificationError, sign_webhook, verify_webhook

# The published vector.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TIMESTAMP = 1614265330
PAYLOAD = '{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
# Signatures the reference tests use as wrong ones.
WRONG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="
OTHER = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
TOLERANCE = 5 * 60


def _verified(payload: str | bytes, headers: dict[str, str], secret: str) -> dict[str, Any]:
    """The published payload is not a Memgov event, so it is compared as a plain dict."""
    return dict(verify_webhook(payload, headers, secret, now=TIMESTAMP))


def _headers(signature: str = SIGNATURE, **changes: str) -> dict[str, str]:
    headers = {
        "webhook-id": MSG_ID,
        "webhook-timestamp": str(TIMESTAMP),
        "webhook-signature": signature,
    }
    headers.update(changes)
    return headers


def test_signing_the_published_message_gives_the_published_signature():
    assert sign_webhook(SECRET, msg_id=MSG_ID, timestamp=TIMESTAMP, payload=PAYLOAD) == SIGNATURE


def test_the_published_delivery_verifies_and_returns_its_body():
    body = _verified(PAYLOAD, _headers(), SECRET)

    assert body == {"test": 2432232314}


def test_the_secret_works_with_and_without_its_prefix_and_bytes_payloads_too():
    bare = SECRET.removeprefix("whsec_")

    assert _verified(PAYLOAD.encode(), _headers(), bare) == {"test": 2432232314}


def test_header_names_are_case_insensitive():
    headers = {name.title(): value for name, value in _headers().items()}

    assert _verified(PAYLOAD, headers, SECRET) == {"test": 2432232314}


def test_one_valid_signature_among_several_is_enough():
    """Several signatures are sent while a secret rotates; unknown versions are skipped."""
    header = " ".join([OTHER, "v2," + OTHER.partition(",")[2], SIGNATURE, OTHER])

    assert _verified(PAYLOAD, _headers(header), SECRET) == {"test": 2432232314}


@pytest.mark.parametrize("signature", [WRONG, OTHER, "v1a," + SIGNATURE.partition(",")[2]])
def test_a_wrong_signature_is_refused(signature):
    with pytest.raises(WebhookVerificationError):
        verify_webhook(PAYLOAD, _headers(signature), SECRET, now=TIMESTAMP)


def test_a_changed_body_is_refused():
    with pytest.raises(WebhookVerificationError):
        verify_webhook('{"test": 2432232315}', _headers(), SECRET, now=TIMESTAMP)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_is_refused(missing):
    headers = _headers()
    del headers[missing]

    with pytest.raises(WebhookVerificationError):
        verify_webhook(PAYLOAD, headers, SECRET, now=TIMESTAMP)


def test_a_timestamp_that_is_not_a_number_is_refused():
    with pytest.raises(WebhookVerificationError):
        verify_webhook(PAYLOAD, _headers(**{"webhook-timestamp": "hello"}), SECRET, now=TIMESTAMP)


@pytest.mark.parametrize("offset", [-(TOLERANCE + 1), TOLERANCE + 1])
def test_a_delivery_outside_five_minutes_is_refused_as_a_replay(offset):
    with pytest.raises(WebhookVerificationError):
        verify_webhook(PAYLOAD, _headers(), SECRET, now=TIMESTAMP - offset)


def test_a_delivery_just_inside_the_tolerance_is_accepted():
    body = verify_webhook(PAYLOAD, _headers(), SECRET, now=TIMESTAMP + TOLERANCE)

    assert dict(body) == {"test": 2432232314}
