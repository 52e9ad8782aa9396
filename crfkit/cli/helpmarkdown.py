"""The command-line reference as Markdown, built from the click commands.

The documentation site's reference pages come from here (``crfkit help COMMAND
--markdown``), with the option groups and help lines of ``--help`` and of the manual
pages, so the three never disagree.
"""

from __future__ import annotations

import html
import inspect

import click

from crfkit.cli.helpgroups import grouped_options
from crfkit.cli.manpage import command_context


def _prose(text: str) -> str:
    """Text as one Markdown line: '<TAB>' and the like shown, not taken for HTML."""
    return html.escape(" ".join(text.split()), quote=False)


def _cell(text: str, *, code: bool = False) -> str:
    """Text safe inside a Markdown table cell (in a code span when ``code``)."""
    text = " ".join(text.split()) if code else _prose(text)
    return text.replace("|", "\\|")


def _description(help_text: str) -> list[str]:
    """The docstring's paragraphs; click's no-rewrap blocks become code blocks."""
    lines: list[str] = []
    for paragraph in inspect.cleandoc(help_text).split("\f")[0].split("\n\n"):
        if paragraph.startswith("\b\n"):
            lines += ["```text", paragraph[2:], "```", ""]
        else:
            lines += [_prose(paragraph), ""]
    return lines


def render_markdown(group: click.Group, command_name: str | None) -> str:
    """The reference of ``crfkit`` (command_name None) or of one command: usage,
    description, then a table of options per group."""
    ctx = command_context(group, command_name)
    command = ctx.command
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"# {ctx.command_path}", "", "```text", f"{ctx.command_path} {usage}", "```", "",
             *_description(command.help or "")]
    for title, params in grouped_options(command, ctx):
        rows = [row for row in (p.get_help_record(ctx) for p in params) if row]
        if not rows:
            continue
        lines += [f"## {title}", "", "| Option | Description |", "| --- | --- |"]
        lines += [f"| `{_cell(term, code=True)}` | {_cell(text)} |" for term, text in rows]
        lines.append("")
    if isinstance(command, click.Group):
        lines += ["## Commands", "", "| Command | Description |", "| --- | --- |"]
        for sub in group.list_commands(ctx):
            short = group.get_command(ctx, sub).get_short_help_str(limit=200)
            lines.append(f"| `{sub}` | {_cell(short)} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
