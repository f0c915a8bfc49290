"""`yolocost config`: check the configuration."""

from __future__ import annotations

import click

from .state import State, pass_state


@click.group(name="config")
def config_group():
    """Check the configuration."""


@config_group.command("check")
@pass_state
def config_check(state: State):
    """Validate the config file and print what it resolves to (never credentials).

    \b
    Example:
      yolocost --config /etc/yolocost.toml config check
    """
    from ..promclient import display_url

    c = state.config
    click.echo(f"config:    {c.source or '(defaults)'}")
    click.echo(f"cluster:   {c.cluster} ({c.timezone}, {c.currency})")
    click.echo(f"database:  {c.database}")
    click.echo(f"grain:     {c.grain_seconds} s, retention {c.retention_days} days")
    click.echo(f"prometheus: {display_url(c.prometheus.url)}" + (" (bearer token set)" if c.prometheus.bearer_token else "")
               + (f" (basic auth as {c.prometheus.username})" if c.prometheus.username else ""))
    click.echo(f"prices:    {len(c.prices)} GPU price entries, {len(c.energy_prices)} energy price entries")


COMMANDS = (config_group,)
