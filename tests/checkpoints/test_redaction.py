"""Redaction measured on a labelled corpus: every credential masked, identifiers left readable."""

from __future__ import annotations

from graphwright.checkpoints.redact import MASK, redact, redact_text
from tests.support.redaction_corpus import CREDENTIALS, IDENTIFIERS


def scores() -> tuple[float, float, list[str], list[str]]:
    """(precision, recall, missed credentials, masked identifiers) over the corpus."""
    missed = [
        s.text
        for s in CREDENTIALS
        if s.secret is None or s.secret in redact_text(s.text) or MASK not in redact_text(s.text)
    ]
    over = [s.text for s in IDENTIFIERS if redact_text(s.text) != s.text]
    caught = len(CREDENTIALS) - len(missed)
    precision = caught / (caught + len(over)) if caught + len(over) else 1.0
    return precision, caught / len(CREDENTIALS), missed, over


def test_the_corpus_is_large_and_labelled() -> None:
    assert len(CREDENTIALS) + len(IDENTIFIERS) >= 200
    assert len(CREDENTIALS) >= 100 and len(IDENTIFIERS) >= 100
    assert all(s.secret and s.secret in s.text for s in CREDENTIALS)


def test_every_credential_is_masked_and_identifiers_stay_readable() -> None:
    precision, recall, missed, over = scores()
    print(
        f"\nredaction: {len(CREDENTIALS)} credentials, {len(IDENTIFIERS)} identifiers; "
        f"precision {precision:.3f}, recall {recall:.3f}"
    )
    assert recall == 1.0, missed
    assert precision >= 0.98, over


def test_secret_named_fields_are_masked_but_token_counts_are_not() -> None:
    event = {
        "api_key": "x1",
        "accessToken": "x2",
        "refresh_token": "x3",
        "Authorization": "x4",
        "input_tokens": 12,
        "token_budget": 100,
        "message_id": "lc_run--abc",
        "tokens": 5,
    }
    out = redact(event)
    assert [k for k, v in out.items() if v == MASK] == [
        "api_key",
        "accessToken",
        "refresh_token",
        "Authorization",
    ]
