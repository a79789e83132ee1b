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
    """Remove the lint cache: the entries shapeflow wrote and the folder if it made it. Nothing
    else is removed, and no link is followed; a folder that is not a shapeflow cache is left
    alone (exit 2)."""
    from ..drivers.cache import cache_location, clean

    if cache_dir:
        target, anchor = os.path.abspath(cache_dir), None
    else:
        target, anchor = cache_location(config_path, isolated)
    done = clean(target, anchor)
    if quiet:
        return
    if done is None:
        click.echo(f"no cache at {display_path(target)}", err=True)
        return
    what = f"removed {done.removed:,} file{'' if done.removed == 1 else 's'} from {display_path(target)}"
    if done.folder_removed:
        what = f"removed {display_path(target)} ({done.removed:,} file{'' if done.removed == 1 else 's'})"
    if done.kept:
        shown = ", ".join(display_path(k) for k in done.kept[:3]) + (", ..." if len(done.kept) > 3 else "")
        what += f"; kept {len(done.kept):,} name{'' if len(done.kept) == 1 else 's'} shapeflow did not write ({shown})"
    click.echo(what, err=True)
