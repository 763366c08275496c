"""Settings read from the environment and a `.env` file (pydantic-settings)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from graphwright.nodes.limits import Limits

# Runs one `graphwright worker` executes at once unless told (`--jobs`). A run waiting on its
# model costs a task on the worker's loop, not a thread, so a worker holds more of them than
# the reference's 10 jobs; `serve --jobs` (10) bounds the API process, which also answers.
WORKER_JOBS = 32


class Settings(BaseSettings):
    """Everything configurable; unset Redis means the embedded server."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    redis_url: str | None = Field(
        default=None,
        validation_alias="REDIS_URL",
        description="Redis to use (redis://, rediss://, unix://, redis+sentinel://); unset "
        "means the embedded server",
    )
    redis_cluster: bool = Field(
        default=False,
        validation_alias="GRAPHWRIGHT_REDIS_CLUSTER",
        description="true when REDIS_URL names a Redis Cluster node",
    )
    refuse_eviction: bool = Field(
        default=False,
        validation_alias="GRAPHWRIGHT_REFUSE_EVICTION",
        description="refuse to start when the server's maxmemory-policy may evict keys",
    )
    home: str = Field(
        default=".graphwright",
        validation_alias="GRAPHWRIGHT_HOME",
        description="folder of the embedded server's data",
    )
    key_prefix: str = Field(
        default="gw",
        validation_alias="GRAPHWRIGHT_KEY_PREFIX",
        description="prefix of every Redis key graphwright writes",
    )
    checkpoint_ttl_s: int | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_CHECKPOINT_TTL",
        description="seconds before an idle thread expires; unset: never",
    )
    encrypt: bool = Field(
        default=False,
        validation_alias="GRAPHWRIGHT_ENCRYPT",
        description="encrypt every stored payload at rest (keys: GRAPHWRIGHT_ENCRYPTION_KEYS)",
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias="OPENAI_API_KEY",
        description="use ChatOpenAI with this key; unset (and no base URL): the offline model",
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias="OPENAI_BASE_URL",
        description="any OpenAI-compatible server; set alone, it also selects ChatOpenAI",
    )
    openai_model: str = Field(
        default="gpt-4o-mini",
        validation_alias="OPENAI_MODEL",
        description="model name",
    )
    openai_timeout_s: float = Field(
        default=60.0,
        validation_alias="OPENAI_TIMEOUT",
        description="seconds per model request",
    )
    openai_max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        validation_alias="OPENAI_MAX_RETRIES",
        description="retries of a model call that failed for a moment (5xx, 429, a timeout, an "
        "empty reply), with backoff, within the run's deadline",
    )
    openai_max_tokens: int | None = Field(
        default=None,
        ge=1,
        validation_alias="OPENAI_MAX_TOKENS",
        description="most tokens one model reply may hold (unset: the server's limit); sent as "
        "max_completion_tokens to OpenAI, as max_tokens to a server at OPENAI_BASE_URL",
    )
    openai_null_content: bool = Field(
        default=False,
        validation_alias="GRAPHWRIGHT_OPENAI_NULL_CONTENT",
        description="send content null on tool-call messages (OpenAI's form); off sends an "
        "empty string, which llama.cpp's server needs",
    )
    graphs: str | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_GRAPHS",
        description="comma-separated module:function entries that register user graphs",
    )
    mcp_servers: str | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_MCP_SERVERS",
        description="MCP servers whose tools the agent gets: inline JSON or a JSON file's path",
    )
    max_model_calls: int = Field(
        default=8,
        validation_alias="GRAPHWRIGHT_MAX_MODEL_CALLS",
        description="model calls per turn before the run stops (max_steps)",
    )
    max_tool_errors: int = Field(
        default=3,
        validation_alias="GRAPHWRIGHT_MAX_TOOL_ERRORS",
        description="failed or malformed tool calls per turn before the run stops",
    )
    deadline_s: float = Field(
        default=300.0,
        validation_alias="GRAPHWRIGHT_DEADLINE_S",
        description="seconds of active time per turn (waiting at a gate does not count)",
    )
    token_budget: int = Field(
        default=200_000,
        validation_alias="GRAPHWRIGHT_TOKEN_BUDGET",
        description="tokens per turn before the run stops",
    )
    input_budget_tokens: int = Field(
        default=16_000,
        validation_alias="GRAPHWRIGHT_INPUT_BUDGET",
        description="tokens of one model request; past 80% of it older turns are compacted",
    )

    project: str = Field(
        default="default",
        validation_alias="GRAPHWRIGHT_PROJECT",
        description="project whose long-term memories every run recalls",
    )
    api_key: SecretStr | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_API_KEY",
        description="key the HTTP service requires as x-api-key; unset: no auth",
    )
    auth: str | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_AUTH",
        description="a langgraph_sdk.Auth object as file.py:name or module:name",
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        validation_alias="GRAPHWRIGHT_MAX_BODY_BYTES",
        description="largest HTTP request body; larger is 413",
    )
    mcp_review_wait_s: float = Field(
        default=240.0,
        ge=0,
        validation_alias="GRAPHWRIGHT_MCP_REVIEW_WAIT_S",
        description="how long an MCP tool call stopped at a gate waits for the reviewer's answer "
        "(within an MCP client's 300 s read timeout); 0 answers at once",
    )
    run_rate_per_minute: float = Field(
        default=120.0,
        validation_alias="GRAPHWRIGHT_RUN_RATE",
        description="runs one identity may create per minute; 0 is off",
    )
    run_burst: int = Field(
        default=0,
        validation_alias="GRAPHWRIGHT_RUN_BURST",
        description="bucket size; 0 means one minute's worth",
    )
    webhook_allow: str = Field(
        default="",
        validation_alias="GRAPHWRIGHT_WEBHOOK_ALLOW",
        description="comma-separated networks or host names webhooks may reach besides public "
        "addresses (private, loopback and link-local ones are refused otherwise)",
    )
    claim_idle_ms: int = Field(
        default=60_000,
        validation_alias="GRAPHWRIGHT_CLAIM_IDLE_MS",
        description="idle time before another worker claims a run whose worker went silent",
    )
    redis_retry_s: float = Field(
        default=15.0,
        ge=0,
        validation_alias="GRAPHWRIGHT_REDIS_RETRY_S",
        description="how long a Redis command keeps retrying through an outage before failing",
    )
    lock_ttl_s: float = Field(
        default=30.0,
        gt=0,
        validation_alias="GRAPHWRIGHT_LOCK_TTL_S",
        description="expiry of a thread's run lock; renewed every third of it while the run lives",
    )
    durability: Literal["sync", "async", "exit"] = Field(
        default="sync",
        validation_alias="GRAPHWRIGHT_DURABILITY",
        description="LangGraph checkpoint durability; sync saves a step before the next starts",
    )
    cors_origins: str | None = Field(
        default=None,
        validation_alias="GRAPHWRIGHT_CORS_ORIGINS",
        description="comma-separated origins browsers may call the HTTP API from ('*': any)",
    )
    allowed_hosts: str = Field(
        default="",
        validation_alias="GRAPHWRIGHT_ALLOWED_HOSTS",
        description="comma-separated host names a server with no API key answers to besides "
        "IP addresses, localhost and its own name (DNS rebinding)",
    )
    run_retention_s: int | None = Field(
        default=None,
        gt=0,
        validation_alias="GRAPHWRIGHT_RUN_RETENTION_S",
        description="how long an ended HTTP run's record is kept; the thread TTL, else 7 days",
    )
    keepalive_s: float = Field(
        default=5.0,
        gt=0,
        validation_alias="GRAPHWRIGHT_KEEPALIVE_S",
        description="how often a waiting runs.wait or runs.join writes a keep-alive newline "
        "(the Agent Server's 5 s), so clients and proxies never see it idle",
    )
    cron_tick_s: float = Field(
        default=1.0,
        validation_alias="GRAPHWRIGHT_CRON_TICK_S",
        description="how often each worker's cron scheduler looks for due runs",
    )
    cron_lease_s: float = Field(
        default=60.0,
        validation_alias="GRAPHWRIGHT_CRON_LEASE_S",
        description="seconds before a claimed cron run is taken over; at least the Redis retry "
        "budget plus one second, whatever is set",
    )

    def limits(self) -> Limits:
        return Limits(
            max_model_calls=self.max_model_calls,
            max_tool_errors=self.max_tool_errors,
            deadline_s=self.deadline_s,
            token_budget=self.token_budget,
            input_budget_tokens=self.input_budget_tokens,
            model_retries=self.openai_max_retries,
        )
