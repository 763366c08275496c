"""Remove secrets from anything written to a trace: by field name and by credential shape.

Credentials are recognised by the shapes their issuers give them (provider key
prefixes, JWTs, bearer and basic headers, private-key blocks, passwords in URLs,
`password=` / `token=` style assignments), in the spirit of detect-secrets'
plugins. Identifiers are left alone however long and random they look: UUIDs,
hex digests and git SHAs, message, run and request ids, order numbers. The
labelled corpus in `tests/support/redaction_corpus.py` measures both sides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

# A field is secret when its name says so: the words below anywhere, or "token"/"key"
# as the last word of the name (refresh_token, api_key), but not token counts.
_SECRET_NAME = re.compile(
    r"(passw(or)?d|\bpwd\b|secret|credential|authori[sz]ation|cookie|private[_-]?key|api[_-]?key"
    r"|access[_-]?key|signing[_-]?key|session[_-]?(id|key)|(^|[_-])(token|auth)$|^token$)",
    re.IGNORECASE,
)

_PROVIDER_KEYS = (
    r"sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic
    r"|(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abprse]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"  # Slack webhooks
    r"|(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"  # AWS access key ids
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret and restricted keys
    r"|whsec_[A-Za-z0-9]{20,}"  # webhook signing secrets
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"  # SendGrid
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,}"  # registries, Hugging Face
    r"|shpat_[a-fA-F0-9]{32}"  # Shopify
    r"|dop_v1_[a-f0-9]{64}|lin_api_[A-Za-z0-9]{30,}"  # DigitalOcean, Linear
)
_SECRET_VALUE = re.compile(
    r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|$)"
    rf"|(?<![A-Za-z0-9])(?:{_PROVIDER_KEYS})"
    r"|\b(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"  # Authorization header values
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{8,}"  # JWTs
    r"|(?<=://)[^/\s:@]*:[^/\s@]+(?=@)"  # user:password in a URL
    # An AWS secret access key: 40 base64 characters, mixed case, with a digit and a / or +.
    r"|(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[/+])(?=[A-Za-z0-9/+]{0,39}[0-9])"
    r"(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# `password=...`, `"api_key": "..."`, `token: ...` in free text: the value is masked.
_ASSIGNED = re.compile(
    r"(?P<key>\b[\w.-]*?(?:passw(?:or)?d|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|secret[_-]?key|signing[_-]?key|encryption[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token|id[_-]?token|(?<![a-z])token)"
    r"[\"']?\s*(?:=|:|=>)\s*[\"']?)(?P<value>[^\s\"',;&}]{3,})",
    re.IGNORECASE,
)


_HEADER = re.compile(
    r"(?P<key>\bauthorization[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\"'\r\n]+)", re.IGNORECASE
)


_CAMEL_SECRET = re.compile(r"[a-z0-9](Token|Secret)$")  # accessToken, clientSecret


@functools.lru_cache(maxsize=4096)  # field names repeat in every event: decided once each
def secret_name(key: str) -> bool:
    """Whether a field called `key` holds a secret (`api_key` does, `input_tokens` does not)."""
    return bool(_SECRET_NAME.search(key) or _CAMEL_SECRET.search(key))


def redact_text(text: str) -> str:
    """Mask every substring shaped like a credential."""
    text = _SECRET_VALUE.sub(MASK, text)
    for pattern in (_HEADER, _ASSIGNED):
        text = pattern.sub(lambda m: m["key"] + (m["value"] if m["value"] == MASK else MASK), text)
    return text


def redact(value: Any) -> Any:
    """A copy of `value` with secret-named fields and credential-shaped strings masked."""
    if isinstance(value, Mapping):
        return {
            k: MASK
            if isinstance(k, str) and secret_name(k) and value[k] not in (None, "")
            else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
