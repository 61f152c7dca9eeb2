"""Instants are written as the contract says (UTC, ``Z``), whichever way ``iso_instant``
takes: orjson for a plain datetime in UTC, ``isoformat`` for anything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from core.times import iso, iso_instant

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30))]
)


def _by_isoformat(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@given(st.datetimes(timezones=st.just(UTC)))
def test_an_instant_in_utc_is_written_as_isoformat_writes_it(value: datetime) -> None:
    assert iso_instant(value) == _by_isoformat(value)
    assert iso_instant(value.replace(microsecond=0)) == _by_isoformat(value.replace(microsecond=0))


# Hypothesis bounds are naive (wall times in the zone drawn); a year inside the range
# keeps every zone's instant within datetime's range once in UTC.
FIRST, LAST = datetime(2, 1, 1), datetime(9998, 12, 31)  # noqa: DTZ001


@given(st.datetimes(min_value=FIRST, max_value=LAST, timezones=ZONES))
def test_an_instant_in_another_zone_is_written_in_utc(value: datetime) -> None:
    assert iso_instant(value) == _by_isoformat(value)
    assert iso_instant(value).endswith("Z")


def test_the_contracts_shapes() -> None:
    assert iso_instant(datetime(2026, 12, 2, 9, 0, tzinfo=UTC)) == "2026-12-02T09:00:00Z"
    assert iso_instant(datetime(2026, 12, 2, 9, 0, 0, 1500, tzinfo=UTC)) == (
        "2026-12-02T09:00:00.001500Z"
    )
    paris = datetime(2026, 12, 2, 10, 0, tzinfo=ZoneInfo("Europe/Paris"))
    assert iso_instant(paris) == "2026-12-02T09:00:00Z"
    assert iso(None) is None


def test_a_datetime_subclass_is_written_too() -> None:
    class Stamped(datetime):
        pass

    assert iso_instant(Stamped(2026, 12, 2, 9, 0, tzinfo=UTC)) == "2026-12-02T09:00:00Z"
