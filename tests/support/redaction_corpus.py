"""A labelled corpus for redaction: credentials in the contexts traces show them, and identifiers
that must stay readable.

Secrets are generated from a seeded random source at import time, so no token-shaped
literal is committed (and none could be a live credential). Each credential entry
names the secret substring that must disappear; an identifier entry must come back
unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Sample:
    text: str
    secret: str | None  # the substring that must be masked; None for a non-credential


def _aws_shaped(s: str) -> bool:
    return (
        any(c in "+/" for c in s)
        and any(c.isdigit() for c in s)
        and any(c.islower() for c in s)
        and any(c.isupper() for c in s)
    )


def _in_context(name: str, secret: str, i: int, j: int, contexts: list[str]) -> str:
    """The `j`th secret of the `i`th kind in a context (an opaque token only after "bearer")."""
    if name == "bearer_opaque":
        return (
            f"Authorization: Bearer {secret}"
            if j % 2
            else f"GET /v1/me with header bearer {secret}"
        )
    return contexts[(i + j) % len(contexts)].format(s=secret)


def _gen(seed: int) -> tuple[list[Sample], list[Sample]]:
    rnd = random.Random(seed)

    def pick(alphabet: str, n: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(n))

    def aws_secret() -> str:
        while not _aws_shaped(s := pick(B64, 40)):
            pass
        return s

    def jwt() -> str:
        head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        body = base64.urlsafe_b64encode(
            json.dumps({"sub": pick(HEX, 8), "exp": 1900000000}).encode()
        )
        return f"{head}.{body.decode().rstrip('=')}.{pick(URLSAFE, 43)}"

    # (name, secret maker): every kind the redactor claims to recognise
    makers = {
        "openai": lambda: "sk-" + pick(ALNUM, 48),
        "openai_project": lambda: "sk-" + "proj-" + pick(URLSAFE, 64),
        "anthropic": lambda: "sk-" + "ant-api03-" + pick(URLSAFE, 93),
        "github_pat": lambda: "gh" + "p_" + pick(ALNUM, 36),
        "github_oauth": lambda: "gh" + "o_" + pick(ALNUM, 36),
        "github_app": lambda: "gh" + "s_" + pick(ALNUM, 36),
        "github_fine": lambda: "github" + "_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59),
        "gitlab": lambda: "gl" + "pat-" + pick(URLSAFE, 20),
        "slack_bot": lambda: (
            "xo"
            + "xb-"
            + pick(string.digits, 12)
            + "-"
            + pick(string.digits, 13)
            + "-"
            + pick(ALNUM, 24)
        ),
        "slack_user": lambda: "xo" + "xp-" + pick(string.digits, 12) + "-" + pick(ALNUM, 32),
        "aws_id": lambda: "AK" + "IA" + pick(string.ascii_uppercase + string.digits, 16),
        "aws_sts": lambda: "AS" + "IA" + pick(string.ascii_uppercase + string.digits, 16),
        "aws_secret": aws_secret,
        "google": lambda: "AI" + "za" + pick(URLSAFE, 35),
        "stripe": lambda: "sk" + "_live_" + pick(ALNUM, 24),
        "stripe_restricted": lambda: "rk" + "_test_" + pick(ALNUM, 24),
        "stripe_webhook": lambda: "wh" + "sec_" + pick(ALNUM, 32),
        "sendgrid": lambda: "SG" + "." + pick(URLSAFE, 22) + "." + pick(URLSAFE, 43),
        "npm": lambda: "np" + "m_" + pick(ALNUM, 36),
        "pypi": lambda: "py" + "pi-AgEIcHlwaS5vcmc" + pick(URLSAFE, 60),
        "huggingface": lambda: "h" + "f_" + pick(ALNUM, 34),
        "shopify": lambda: "sh" + "pat_" + pick(HEX, 32),
        "digitalocean": lambda: "do" + "p_v1_" + pick(HEX, 64),
        "jwt": jwt,
        "bearer_opaque": lambda: pick(ALNUM, 32),
    }
    contexts = [
        "{s}",
        "OPENAI_API_KEY={s}",
        "export TOKEN_VALUE='{s}'",
        'config: {{"credential": "{s}", "region": "eu-west-1"}}',
        "using {s} for the request",
        "error 401: the key {s} was revoked",
        "- name: deploy\n  env:\n    KEY: {s}",
        "curl https://api.example.com/v1/items -H 'X-Api-Key: {s}'",
    ]
    creds: list[Sample] = []
    for i, (name, make) in enumerate(makers.items()):
        for j in range(4):
            secret = make()
            creds.append(Sample(_in_context(name, secret, i, j, contexts), secret))
    password = lambda: pick(ALNUM + "!#%^*", 14)  # noqa: E731
    for template in (
        "postgres://app:{p}@db.internal:5432/orders",
        "redis://:{p}@cache:6379/0",
        "amqp://guest:{p}@mq:5672/",
        "mongodb+srv://svc:{p}@cluster0.example.net/app",
        "https://deploy:{p}@git.example.com/team/repo.git",
        "password={p}",
        "DB_PASSWORD={p}",
        '{{"password": "{p}"}}',
        "passwd: {p}",
        "client_secret={p}&grant_type=client_credentials",
        "api_key: {p}",
        "token={p}",
        "access_token={p}&expires_in=3600",
        "refresh_token: {p}",
        "secret_key = '{p}'",
        "mysql -u root --password={p}",
        "smtp_password: {p}",
        "AWS_SECRET_ACCESS_KEY={p}",
        "auth_token={p}",
        "pwd={p}",
    ):
        for _ in range(2):
            p = password()
            creds.append(Sample(template.format(p=p), p))
    basic = base64.b64encode(f"admin:{password()}".encode()).decode()
    creds.append(Sample(f"Authorization: Basic {basic}", basic))
    drf = pick(HEX, 40)
    creds.append(Sample(f"Authorization: Token {drf}", drf))
    key_body = "\n".join(pick(B64, 64) for _ in range(4))
    creds.append(
        Sample(
            f"-----BEGIN RSA PRIVATE KEY-----\n{key_body}\n-----END RSA PRIVATE KEY-----", key_body
        )
    )
    creds.append(Sample(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_body[:100]}", key_body[:100]))
    hook = f"https://hooks.slack.com/services/T{pick(ALNUM, 8)}/B{pick(ALNUM, 8)}/{pick(ALNUM, 24)}"
    creds.append(Sample(f"webhook: {hook}", hook.split("services/")[1]))

    def uid() -> str:
        return str(uuid.UUID(int=rnd.getrandbits(128), version=4))

    plain = [
        lambda: uid(),
        lambda: f"thread {uid()}",
        lambda: uuid.UUID(int=rnd.getrandbits(128)).hex,
        lambda: f"commit {pick(HEX, 40)}",
        lambda: f"merged {pick(HEX, 40)} into main",
        lambda: f"sha256:{pick(HEX, 64)}",
        lambda: f"image registry.example.com/app@sha256:{pick(HEX, 64)}",
        lambda: f"lc_run--{uid()}",
        lambda: f"run-{uid()}-0",
        lambda: f"chatcmpl-{pick(ALNUM, 29)}",
        lambda: f"call_{pick(ALNUM, 24)}",
        lambda: f"req_{pick(HEX, 32)}",
        lambda: f"msg_01{pick(ALNUM, 22)}",
        lambda: f"x-request-id: {uid()}",
        lambda: f"traceparent: 00-{pick(HEX, 32)}-{pick(HEX, 16)}-01",
        lambda: pick(string.ascii_uppercase[:26] + string.digits, 26),  # ULID-like
        lambda: f"订单 A{rnd.randint(1000, 9999)} 已发货，物流单号 SF{rnd.randint(1000, 99999)}",
        lambda: f"order_id=A{rnd.randint(1000, 99999)}",
        lambda: f"ticket INC-{rnd.randint(100, 99999)}",
        lambda: (
            f'{{"kind": "model_call", "input_tokens": {rnd.randint(1, 9000)}, "output_tokens": 12}}'
        ),
        lambda: f"max_tokens={rnd.randint(16, 4096)}",
        lambda: f"token_budget: {rnd.randint(1000, 200000)}",
        lambda: f"tokens {rnd.randint(10, 9000)} · model calls 3",
        lambda: f"{uid()}:{'call_' + pick(ALNUM, 12)}",
        lambda: f"gw:{{{uid()}}}:ckpt:{pick(HEX, 16)}",
        lambda: f"/var/lib/app/{pick(HEX, 2)}/{pick(HEX, 38)}",
        lambda: f"https://example.com/orders/{uid()}?page=2",
        lambda: f"li.{pick(string.ascii_lowercase, 5)}@example.com",
        lambda: f"nonce {pick(B64, 22)}==",
        lambda: f'etag W/"{pick(HEX, 32)}"',
        lambda: (
            f"pod api-{pick(HEX, 10)}-{pick(string.ascii_lowercase + string.digits, 5)} restarted"
        ),
        lambda: (
            f"checkpoint 1ef{pick(HEX, 5)}-{pick(HEX, 4)}-6{pick(HEX, 3)}"
            f"-8{pick(HEX, 3)}-{pick(HEX, 12)}"
        ),
        lambda: f"The token expires in {rnd.randint(1, 60)} minutes; ask for a new one.",
        lambda: "Reset your password from the account page.",
        lambda: f"ch_{pick(ALNUM, 24)}",
        lambda: f"cus_{pick(ALNUM, 14)}",
        lambda: f"pi_{pick(ALNUM, 24)}",
        lambda: f"data:image/png;base64,{pick(B64, 120)}",
        lambda: f"{pick(HEX, 32)}",
        lambda: f"git checkout {pick(HEX, 7)}",
        lambda: f"span_id={pick(HEX, 16)}",
        lambda: f"Idempotency-Key: {uid()}",
        lambda: f"tracking {pick(string.ascii_uppercase, 2)}{rnd.randint(10**9, 10**10)}",
        lambda: f"session started for user u{rnd.randint(1, 9999)}",
        lambda: (
            "Stopped before finishing: the run used its budget of model calls"
            f" (step {rnd.randint(1, 9)})."
        ),
        lambda: f"page {rnd.randint(1, 200)}. log line ok; log line ok;",
    ]
    others = [Sample(make(), None) for _ in range(3) for make in plain]
    return creds, others


CREDENTIALS, IDENTIFIERS = _gen(13)
