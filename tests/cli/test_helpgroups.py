"""Grouped --help and the manual pages built from the same click commands."""

from __future__ import annotations

import re
import shutil
import subprocess

import click
import pytest

from crfkit.cli import cli
from crfkit.cli.helpgroups import grouped_options, named_options
from crfkit.cli.manpage import escape, render_page, write_pages
from tests.helpers import one_error_line, run

MANY_OPTIONS = 12
"""A command with more options than this must list them in groups."""


def _context(name: str) -> click.Context:
    root = click.Context(cli, info_name="crfkit", **cli.context_settings)
    return click.Context(cli.commands[name], info_name=name, parent=root)


def _options(name: str) -> list[click.Option]:
    ctx = _context(name)
    return [p for p in ctx.command.get_params(ctx) if isinstance(p, click.Option)]


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_option_of_a_long_command_is_in_exactly_one_group(name):
    command = cli.commands[name]
    groups = getattr(command, "option_groups", ())
    if len(_options(name)) <= MANY_OPTIONS and not groups:
        return
    assert groups, f"{name} has many options: give it option_groups (crfkit.cli.helpgroups)"
    grouped = [option for _, names in groups for option in names]
    assert len(grouped) == len(set(grouped)), f"{name}: an option in two groups"
    assert sorted(grouped) == sorted(named_options(command, _context(name))), name
    assert all(names for _, names in groups), f"{name}: an empty group"


@pytest.mark.parametrize("name", ["train", "tune", "label"])
def test_help_writes_each_group_as_a_section_holding_its_options(name):
    text = run(name, "--help").stdout
    headings = [m.group(1) for m in re.finditer(r"^(\S[^\n]*):\n", text, re.M)]
    titles = [title for title, _ in cli.commands[name].option_groups]
    assert headings[-len(titles):] == titles
    assert "Options:" not in headings and "Other options:" not in text
    for title, params in grouped_options(cli.commands[name], _context(name)):
        section = text.split(f"\n{title}:\n")[1].split("\n\n")[0]
        for param in params:
            assert param.opts[-1] in section, (title, param.opts)


def test_train_help_shows_choices_and_defaults_in_their_groups():
    text = run("train", "--help").stdout
    skip = " ".join(text.split("\nSkip chain:\n")[1].split("\n\n")[0].split())
    assert "[next|all|first]" in skip and "[default: next]" in skip
    io = " ".join(text.split("\nInput/output:\n")[1].split("\n\n")[0].split())
    assert "[columns|crfsuite]" in io and "[default: utf-8]" in io


def test_manual_page_of_train_holds_every_option_and_group():
    page = render_page(cli, "train")
    assert page.startswith('.TH "CRFKIT-TRAIN" 1')
    lines = page.splitlines()
    terms = "\n".join(lines[i + 1] for i, line in enumerate(lines) if line == ".TP")
    for option in _options("train"):
        for spelling in option.opts + option.secondary_opts:
            assert re.search(rf"(\\fB|, ){re.escape(escape(spelling))}\b", terms), spelling
    for title, _ in cli.commands["train"].option_groups:
        assert f'.SS "{escape(title)}"' in page


def test_help_command_off_a_terminal_prints_the_grouped_help_text():
    shown = run("help", "train").stdout
    assert shown.startswith("Usage: crfkit train ")
    body = run("train", "--help").stdout.split("\n", 1)[1]  # the runner names the program cli
    assert shown.split("\n", 1)[1].strip() == body.strip()
    for option in _options("train"):
        assert option.opts[-1] in shown


def test_program_page_lists_every_command():
    page = render_page(cli, None)
    for name in cli.commands:
        assert f"\\fB{escape(name)}\\fR" in page and f"crfkit\\-{escape(name)}" in page


def test_write_man_writes_one_page_per_command_equal_to_the_rendered_one(tmp_path):
    paths = write_pages(cli, str(tmp_path / "man1"))
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == sorted(
        ["crfkit.1"] + [f"crfkit-{name}.1" for name in cli.commands])
    assert (tmp_path / "man1" / "crfkit-label.1").read_text() == render_page(cli, "label")


def test_troff_escapes_hyphens_backslashes_and_leading_dots():
    assert escape("-a\\b") == "\\-a\\eb"
    assert escape("x\n.y\n'z") == "x\n\\&.y\n\\&'z"


def test_help_for_an_unknown_command_is_one_error_line():
    one_error_line(run("help", "tran"), "tran", "train")


def test_markdown_reference_has_the_groups_and_every_option_of_train():
    from crfkit.cli.helpmarkdown import render_markdown

    page = run("help", "train", "--markdown").stdout
    assert page == render_markdown(cli, "train")
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    assert headings == [title for title, _ in cli.commands["train"].option_groups]
    options_column = "\n".join(line.split("`")[1] for line in page.splitlines()
                               if line.startswith("| `"))
    for option in _options("train"):
        for spelling in option.opts + option.secondary_opts:
            assert re.search(rf"(^|, ){re.escape(spelling)}\b", options_column, re.M), spelling
    assert "LABEL&lt;TAB&gt;ATTR" in page and "`-T, --type crf\\|memm" in page


def test_write_man_into_an_impossible_directory_is_one_error_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    one_error_line(run("help", "--write-man", blocker / "man1"), str(blocker / "man1"))


def test_help_on_a_terminal_opens_the_manual_page_in_man(monkeypatch):
    import crfkit.cli.manpage as manpage

    shown = []
    monkeypatch.setattr(manpage.sys, "stdout", _Terminal())
    monkeypatch.setattr(manpage.sys, "platform", "linux")
    monkeypatch.setattr(manpage.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(manpage.subprocess, "run",
                        lambda argv, input, text: shown.append((argv, input)) or _Done())
    manpage.show_help(cli, "tune")
    assert shown == [(["man", "-l", "-"], render_page(cli, "tune"))]


class _Terminal:
    def isatty(self) -> bool:
        return True


class _Done:
    returncode = 0


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_groff_reads_every_page_without_a_warning(tmp_path):
    for path in write_pages(cli, str(tmp_path)):
        checked = subprocess.run(["groff", "-man", "-ww", "-z", path], capture_output=True,
                                 text=True)
        assert checked.returncode == 0 and checked.stderr == "", (path, checked.stderr)
