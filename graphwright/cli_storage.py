"""The CLI's storage commands: `rekey` and `seal` what is stored, `embedded stop`."""

from __future__ import annotations

import json

import typer

from graphwright.cli_output import JSON, console, emit_json, friendly, orchestrator
from graphwright_errors import ConfigurationError

embedded_app = typer.Typer(
    rich_markup_mode="markdown", help="The embedded Redis that holds state when REDIS_URL is unset."
)


def rekey_command(as_json: bool = JSON) -> None:
    """Re-encrypt what is stored with the newest key of GRAPHWRIGHT_ENCRYPTION_KEYS."""
    _reseal(seal_plain=False, as_json=as_json)


def seal_command(as_json: bool = JSON) -> None:
    """Seal what was stored before encryption was on, then re-encrypt as rekey does."""
    _reseal(seal_plain=True, as_json=as_json)


def _reseal(*, seal_plain: bool, as_json: bool) -> None:
    from graphwright.checkpoints.rekey import rekey
    from graphwright.tools.builtin import fill_calendar_slots

    orch = orchestrator()
    if not orch.sealer.on:
        raise ConfigurationError("encryption is off; set GRAPHWRIGHT_ENCRYPT=1 and the keys first")
    places = orch.keys.sealed_places() if seal_plain else ()
    if seal_plain:  # before the calendar's plain events are sealed, its overlap check needs them
        fill_calendar_slots(orch.client, orch.keys)
    report = rekey(orch.client, orch.sealer, orch.settings.key_prefix, places)
    # the thread index's keyed hashes follow the newest key too, so the old key can go
    threads = orch.index.reindex(lambda t: json.loads(orch.meta(t).get("metadata") or "{}"))
    if as_json:
        emit_json(
            {
                "keys_seen": report.keys_seen,
                "values_resealed": report.values_resealed,
                "values_sealed": report.values_sealed,
                "threads_reindexed": threads,
            }
        )
    else:
        console.print(
            f"sealed {report.values_sealed} plain values, re-sealed "
            f"{report.values_resealed} values in {report.keys_seen} keys; "
            f"re-indexed {threads} threads"
        )


@embedded_app.command("stop")
@friendly
def embedded_stop() -> None:
    """Shut the embedded Redis down cleanly (its data stays on disk)."""
    from graphwright.checkpoints.embedded import EmbeddedRedis
    from graphwright.settings import Settings

    EmbeddedRedis(Settings().home).stop()
    console.print("embedded Redis stopped")
