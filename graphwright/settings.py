"""Settings read from the environment and a ``.env`` file (pydantic-settings)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything configurable; unset Redis means the embedded server."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    redis_cluster: bool = Field(default=False, validation_alias="GRAPHWRIGHT_REDIS_CLUSTER")
    home: str = Field(default=".graphwright", validation_alias="GRAPHWRIGHT_HOME")
    key_prefix: str = Field(default="gw", validation_alias="GRAPHWRIGHT_KEY_PREFIX")
    checkpoint_ttl_s: int | None = Field(
        default=None, validation_alias="GRAPHWRIGHT_CHECKPOINT_TTL"
    )
    encrypt: bool = Field(default=False, validation_alias="GRAPHWRIGHT_ENCRYPT")
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    openai_model: str = Field(default="gpt-4o-mini", validation_alias="OPENAI_MODEL")
    openai_timeout_s: float = Field(default=60.0, validation_alias="OPENAI_TIMEOUT")
    openai_max_retries: int = Field(default=2, validation_alias="OPENAI_MAX_RETRIES")
