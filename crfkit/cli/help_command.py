"""crfkit help: the manual page of crfkit or of one command, built from the options."""

from __future__ import annotations

import click


@click.command("help", short_help="Show the manual page of crfkit or of a command.")
@click.argument("command_name", metavar="[COMMAND]", required=False)
@click.option("--troff", is_flag=True, help="Print the page's troff source instead.")
@click.option("--markdown", is_flag=True,
              help="Print the page as Markdown (the documentation's command reference).")
@click.option("--write-man", "man_dir", default=None, metavar="DIR",
              help="Write crfkit.1 and crfkit-COMMAND.1 for every command into DIR (for "
                   "example ~/.local/share/man/man1), so that 'man crfkit-train' works.")
@click.pass_context
def help_command(ctx: click.Context, command_name: str | None, troff: bool, markdown: bool,
                 man_dir: str | None) -> None:
    """Show the manual page of crfkit, or of COMMAND, built from the options themselves.

    On a terminal the page opens in man; elsewhere (a pipe, a file) it is the
    text of 'crfkit COMMAND --help', with the same option groups.
    """
    from crfkit.cli.manpage import render_page, show_help, write_pages

    cli = ctx.find_root().command
    if man_dir is not None:
        for path in write_pages(cli, man_dir):
            click.echo(path)
    elif troff:
        click.echo(render_page(cli, command_name), nl=False)
    elif markdown:
        from crfkit.cli.helpmarkdown import render_markdown

        click.echo(render_markdown(cli, command_name), nl=False)
    else:
        show_help(cli, command_name)
