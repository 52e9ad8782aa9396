"""Manual pages (troff, section 1) rendered from the click commands themselves.

The pages are built at run time from the same Command objects that parse the
arguments, with the same option groups and help lines as ``--help``
(:mod:`crfkit.cli.helpgroups`), so they cannot drift from the code. ``crfkit help``
shows one; ``crfkit help --write-man DIR`` writes them all where ``man`` finds them.
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys

import click

from crfkit import __version__
from crfkit.cli.helpgroups import grouped_options
from crfkit.errors import OutputError, UsageError

PROGRAM = "crfkit"


def escape(text: str) -> str:
    """Text safe in a troff line: backslashes and hyphens escaped, and no line that
    starts with a control character ('.' or "'")."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line
                     for line in text.split("\n"))


def page_name(command_name: str | None) -> str:
    """The page's name: crfkit for the program, crfkit-COMMAND for a command."""
    return PROGRAM if command_name is None else f"{PROGRAM}-{command_name}"


def command_context(group: click.Group, command_name: str | None) -> click.Context:
    """A context for rendering help as ``crfkit COMMAND --help`` would (same usage line,
    same help option names); an unknown command is a one-line usage error."""
    root = click.Context(group, info_name=PROGRAM, **group.context_settings)
    if command_name is None:
        return root
    command = group.get_command(root, command_name)
    if command is None:
        known = ", ".join(group.list_commands(root))
        raise UsageError(f"help: no command {command_name!r} (commands: {known})")
    return click.Context(command, info_name=command_name, parent=root)


def _description(help_text: str) -> list[str]:
    """The docstring as troff paragraphs; click's no-rewrap blocks (a line holding only
    \\b) stay preformatted, as in --help."""
    text = inspect.cleandoc(help_text).split("\f")[0]
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        if paragraph.startswith("\b\n"):
            lines += [".PP", ".nf", escape(paragraph[2:]), ".fi"]
        else:
            lines += [".PP", escape(" ".join(paragraph.split()))]
    return lines


def _options(ctx: click.Context) -> list[str]:
    """The OPTIONS section: a subsection per option group (none for a command without
    groups)."""
    lines = [".SH OPTIONS"]
    sections = grouped_options(ctx.command, ctx)
    for title, params in sections:
        rows = [row for row in (p.get_help_record(ctx) for p in params) if row]
        if not rows:
            continue
        if len(sections) > 1:
            lines.append(f'.SS "{escape(title)}"')
        for term, help_line in rows:
            lines += [".TP", f"\\fB{escape(term)}\\fR", escape(help_line)]
    return lines


def render_page(group: click.Group, command_name: str | None) -> str:
    """The troff source of ``crfkit.1`` (command_name None) or ``crfkit-COMMAND.1``."""
    ctx = command_context(group, command_name)
    command = ctx.command
    name = page_name(command_name)
    summary = command.get_short_help_str(limit=200)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f'.TH "{name.upper()}" 1 "" "{PROGRAM} {__version__}" "{PROGRAM} manual"',
             ".nh", ".SH NAME", f"{escape(name)} \\- {escape(summary)}",
             ".SH SYNOPSIS", f"\\fB{escape(ctx.command_path)}\\fR {escape(usage)}",
             ".SH DESCRIPTION", *_description(command.help or "")]
    lines += _options(ctx)
    if isinstance(command, click.Group):
        lines.append(".SH COMMANDS")
        for sub in group.list_commands(ctx):
            short = group.get_command(ctx, sub).get_short_help_str(limit=200)
            lines += [".TP", f"\\fB{escape(sub)}\\fR", escape(short),
                      f"See \\fB{escape(page_name(sub))}\\fR(1)."]
        see_also = [page_name(sub) for sub in group.list_commands(ctx)]
    else:
        see_also = [PROGRAM]
    lines += [".SH SEE ALSO", ", ".join(f"\\fB{escape(n)}\\fR(1)" for n in see_also)]
    return "\n".join(lines) + "\n"


def write_pages(group: click.Group, directory: str) -> list[str]:
    """Write crfkit.1 and crfkit-COMMAND.1 for every command into ``directory`` (created
    if missing); returns the paths written."""
    from crfkit.io.atomic import atomic_output

    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{directory}: cannot create the directory: "
                          f"{err.strerror or err}") from None
    names = [None, *group.list_commands(click.Context(group))]
    written = []
    for command_name in names:
        path = os.path.join(directory, page_name(command_name) + ".1")
        with atomic_output(path) as out:
            out.write(render_page(group, command_name))
        written.append(path)
    return written


def show_help(group: click.Group, command_name: str | None) -> None:
    """On a terminal with man-db, the manual page through ``man``; anywhere else the
    same text as ``--help`` (same groups, same lines), so pipes and scripts read text."""
    if sys.stdout.isatty() and shutil.which("man") and sys.platform.startswith("linux"):
        page = render_page(group, command_name)
        if subprocess.run(["man", "-l", "-"], input=page, text=True).returncode == 0:
            return
    ctx = command_context(group, command_name)
    click.echo(ctx.command.get_help(ctx))
