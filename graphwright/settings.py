"""Settings read from the environment and a ``.env`` file (pydantic-settings)."""

from __future__ import annotations

from pydantic import Field
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
