"""crfkit update: set chosen weights of a model from a patch file (Wapiti's update mode)."""

from __future__ import annotations

import click


@click.command("update", short_help="Set weights of a model from a patch file.")
@click.option("-m", "--model", "model_file", required=True, metavar="MODEL",
              type=click.Path(exists=True, dir_okay=False), help="The model to patch.")
@click.argument("patch_file", metavar="PATCH", type=click.Path(allow_dash=True))
@click.argument("output_file", metavar="OUTPUT", type=click.Path(allow_dash=False))
@click.option("-c", "--compact", is_flag=True,
              help="Then drop zero weights and the observations left without any.")
@click.option("-q", "--quiet", is_flag=True,
              help="No summary line on stderr; errors are still shown.")
def update_command(model_file, patch_file, output_file, compact, quiet) -> None:
    """Write MODEL to OUTPUT with the weights PATCH sets (Wapiti's update mode).

    Each PATCH line names a feature and its new weight, as 'crfkit dump' writes
    them (OBSERVATION TAB LABEL-or-PREV->LABEL TAB WEIGHT; a whole dump, edited,
    will do) or as Wapiti's dump does (OBSERVATION PREV-or-# LABEL WEIGHT). The
    rest of the model is unchanged; a feature the model lacks is an error.
    PATCH may be '-' (stdin). OUTPUT is written atomically.
    """
    from crfkit.errors import CrfkitError
    from crfkit.io.atomic import check_writable
    from crfkit.io.text_input import open_source
    from crfkit.model.model import Model
    from crfkit.model.model import compact as compact_model
    from crfkit.model.patch import apply_patch

    check_writable(output_file)
    model = Model.load(model_file)
    stream, name, owned = open_source(patch_file)
    try:
        text = stream.read().decode(model.encoding)
    except UnicodeDecodeError as err:
        raise CrfkitError(f"{name}: not {model.encoding} text ({err.reason} at byte "
                          f"{err.start})") from None
    finally:
        if owned:
            stream.close()
    changed = apply_patch(model, text.splitlines(), name)
    if compact:
        model = compact_model(model)
    model.save(output_file)
    if not quiet:
        click.echo(f"* {changed} weights set; model written to {output_file}", err=True)
