"""``shapeflow clean``: remove the lint cache (``.shapeflow_cache``)."""

from __future__ import annotations

import os

import click

from ..errors import display_path


@click.command("clean")
@click.option("--cache-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="The cache folder (default: .shapeflow_cache next to the nearest config file, "
                   "or in the current directory), as for lint.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              help="The config file lint is given (its folder holds the cache).")
@click.option("--isolated", is_flag=True, help="Ignore every config file (the cache in the current directory).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing.")
def command(cache_dir: str | None, config_path: str | None, isolated: bool, quiet: bool) -> None:
    """Remove the lint cache. A folder that is not a shapeflow cache is left alone (exit 2)."""
    from ..drivers.cache import clean, default_cache_dir

    target = os.path.abspath(cache_dir) if cache_dir else default_cache_dir(config_path, isolated)
    removed = clean(target)
    if not quiet:
        click.echo(f"{'removed' if removed else 'no cache at'} {display_path(target)}", err=True)
